// A loopback proxy that adds mcpool's bearer token, so the conformance suite's
// `server` command (which has no option to send a header) can test mcpool's
// endpoints: `node bearer-proxy.mjs http://127.0.0.1:PORT` with MCPOOL_TOKEN
// set listens on 127.0.0.1 (port 0 unless PROXY_PORT), prints
// `listening on http://127.0.0.1:N` on stdout, and forwards every request to
// the target with `Authorization: Bearer $MCPOOL_TOKEN` and every other
// header as sent (Host and Origin too: the suite's DNS-rebinding scenario
// must reach mcpool's own checks). Bodies stream both ways (SSE included).

import http from 'node:http';

const target = new URL(process.argv[2] ?? '');
const token = process.env.MCPOOL_TOKEN;
if (!token) {
  console.error('bearer-proxy.mjs: MCPOOL_TOKEN is not set');
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.rawHeaders);
      up.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`bearer-proxy: ${e.message}`);
  });
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
});

server.listen(Number(process.env.PROXY_PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));

// What the test scripts on the official TypeScript SDKs share: their
// command-line options and the SDKs' modules, loaded from the repo's
// node_modules (or `--node-modules DIR`), whatever the folder they run in.

import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

/** The value after `--name` on the command line, else `fallback`. */
export function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const here = fileURLToPath(new URL(".", import.meta.url));
const nodeModules = arg("node-modules", join(here, "..", "..", "node_modules"));

/** A module of node_modules by its path there (`pkg/dist/x.js`). */
export const load = (pkg) => import(pathToFileURL(join(nodeModules, pkg)).href);

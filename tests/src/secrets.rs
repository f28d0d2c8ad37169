//! Secrets in tests: fresh values, and the check that a text holds none of
//! them in any form an encoder could leave (bytes, hex, digest, base64).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A fresh secret value, different in every test and run.
pub fn new_secret(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!("{tag}-{}-{nanos}", std::process::id());
    format!("sk-{}", &hex::encode(Sha256::digest(seed.as_bytes()))[..40])
}

/// Standard and URL-safe base64, without padding.
fn base64(bytes: &[u8], url_safe: bool) -> String {
    let alphabet: &[u8] = if url_safe {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Every form of `secret` that must appear nowhere: the bytes, their hex,
/// their sha256 in hex (either case), and their base64 at each of the three
/// alignments it can have inside a longer encoded text (the characters
/// that depend on the secret's bytes alone).
pub fn forms(secret: &str) -> Vec<String> {
    let digest = hex::encode(Sha256::digest(secret.as_bytes()));
    let mut forms = vec![
        secret.to_string(),
        hex::encode(secret.as_bytes()),
        digest.clone(),
        digest.to_uppercase(),
    ];
    let n = secret.len();
    for pad in 0..3 {
        let mut bytes = vec![0u8; pad];
        bytes.extend_from_slice(secret.as_bytes());
        let (start, end) = ((8 * pad).div_ceil(6), 8 * (pad + n) / 6);
        for url_safe in [false, true] {
            forms.push(base64(&bytes, url_safe)[start..end].to_string());
        }
    }
    forms
}

/// Fails when `text` (from `what`) holds any form of any secret.
pub fn assert_clean(what: &str, text: &[u8], secrets: &[&str]) {
    let text = String::from_utf8_lossy(text);
    for secret in secrets {
        for form in forms(secret) {
            assert!(!text.contains(&form), "{what} holds the secret as {form:?}:\n{text}");
        }
    }
}

/// Fails when `text` holds any piece of `secret` of `min` or more characters
/// beyond its `sk-` lead: what a text cut before it was redacted leaves.
pub fn assert_no_fragment(what: &str, text: &str, secret: &str, min: usize) {
    let body = secret.strip_prefix("sk-").unwrap_or(secret);
    for start in 0..=body.len().saturating_sub(min) {
        let piece = &body[start..start + min];
        assert!(
            !text.contains(piece),
            "{what} holds a piece of the secret ({piece:?} of {secret:?}):\n{text}"
        );
    }
}

/// Mixed into the digest a wrapper checks its key against, so not even a
/// plain digest of the secret is written by the test.
const SALT: &str = "mcpool-test-salt:";

fn salted(secret: &str) -> String {
    hex::encode(Sha256::digest(format!("{SALT}{secret}").as_bytes()))
}

/// `dir/f.sh`: the fault server over stdio, which first prints its
/// `$SERVICE_TOKEN` to stderr as careless servers do, then
/// `listening on stdio`.
pub fn token_printing_server(dir: &Path) -> anyhow::Result<PathBuf> {
    let script = dir.join("f.sh");
    crate::write_script(
        &script,
        format!(
            "#!/bin/sh\necho \"starting with SERVICE_TOKEN=$SERVICE_TOKEN\" >&2\necho 'listening on stdio' >&2\nexec '{}' stdio\n",
            crate::bin("mcpool-faulty").display()
        ),
    )?;
    Ok(script)
}

/// A stdio server that starts only when `$API_KEY` is `secret` (checked by
/// a salted digest), printing the key it got to stderr as careless servers
/// do. With `exit_anyway` it prints the key and exits 1 even so. Answers
/// the script and the fault server's spawn log.
pub fn key_checking_server(
    dir: &Path,
    name: &str,
    secret: &str,
    exit_anyway: bool,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let script = dir.join(format!("{name}.sh"));
    let log = dir.join(format!("{name}.log"));
    let tail = if exit_anyway {
        "echo \"giving up although the key $API_KEY is right\" >&2; exit 1".to_string()
    } else {
        format!(
            "exec '{}' stdio --spawn-log '{}' \"$@\"",
            crate::bin("mcpool-faulty").display(),
            log.display()
        )
    };
    let body = format!(
        r#"#!/bin/sh
echo "starting with API_KEY=$API_KEY" >&2
got=$(printf '%s%s' '{SALT}' "$API_KEY" | sha256sum | cut -d' ' -f1)
if [ "$got" != '{want}' ]; then
  echo "refusing to start: API_KEY is missing or wrong" >&2
  exit 1
fi
{tail}
"#,
        want = salted(secret),
    );
    crate::write_script(&script, body)?;
    Ok((script, log))
}

/// Where a test of secret handling starts: the instance's dir, a dir beside
/// it for the test's scripts and logs, and a fresh secret already stored in
/// the instance's keyring.
pub struct Keyed {
    pub dir: crate::TempDir,
    pub scripts: crate::TempDir,
    pub key: String,
}

impl Keyed {
    /// The dirs `tag` and `tag-bin`, and a fresh secret stored as `name`.
    pub async fn new(tag: &str, name: &str) -> anyhow::Result<Self> {
        let dir = crate::TempDir::new(tag);
        let scripts = crate::TempDir::new(&format!("{tag}-bin"));
        let key = new_secret(&format!("{tag}-key"));
        crate::store_secret(dir.path(), name, &key).await?;
        Ok(Keyed { dir, scripts, key })
    }
}

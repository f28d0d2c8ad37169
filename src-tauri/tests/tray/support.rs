//! The tray test's helpers: the app and its servers as processes, the
//! app's HTTP API, and what the X display and the tray item show.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::Value;
use tokio::process::Command;
use tokio::time::Instant;

use crate::desktop::{Note, Notifications};
use crate::TOKEN;

pub use mcpool_tests::repo_root;

/// How long a step waits for the app by default: generous, because CI
/// machines run this next to a whole test suite.
pub const PATIENCE: Duration = Duration::from_secs(30);
/// How often `eventually` looks again.
const POLL: Duration = Duration::from_millis(100);

/// Looks until `check` finds what it waits for (`Ok(Some(_))`), for at most
/// `within`; then fails naming `what` and the last thing seen. An error from
/// `check` counts as "not yet" (the app may still be starting), and the last
/// one is what the failure reports, so checks `bail!` with what they saw.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let end = Instant::now() + within;
    loop {
        let last = match check().await {
            Ok(Some(found)) => return Ok(found),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if Instant::now() >= end {
            match last {
                Some(e) => bail!("{what}: not within {within:?}; last seen: {e:#}"),
                None => bail!("{what}: not within {within:?}"),
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Activates notification `id` as a click on it would, until `acted` sees
/// the app act on it. The app starts listening for the activation just
/// after the desktop has shown the notification, so a test that clicks
/// within a millisecond (no person can) may click before anyone listens:
/// the click is repeated until it takes, which is harmless because the app
/// acts on a notification's first activation only.
pub async fn activate<F, Fut>(desktop: &zbus::Connection, id: u32, what: &str, mut acted: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<()>>>,
{
    let iface = desktop
        .object_server()
        .interface::<_, Notifications>("/org/freedesktop/Notifications")
        .await?;
    let mut last = None;
    for _ in 0..6 {
        Notifications::action_invoked(iface.signal_emitter(), id, "default").await?;
        match eventually(what, Duration::from_secs(5), &mut acted).await {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("{what}: never activated")))
}

pub fn temp_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mcpool-tray-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub struct Api {
    pub base: String,
    pub http: reqwest::Client,
}

impl Api {
    /// The API of the app whose MCP endpoint is `endpoint` (`…/mcp`).
    pub fn at(endpoint: &str) -> Self {
        Api {
            base: endpoint.trim_end_matches("/mcp").to_string(),
            http: reqwest::Client::new(),
        }
    }

    pub async fn servers(&self) -> anyhow::Result<Vec<Value>> {
        Ok(self
            .http
            .get(format!("{}/api/servers", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    pub async fn status(&self, name: &str) -> anyhow::Result<String> {
        let servers = self.servers().await?;
        let s = servers
            .iter()
            .find(|s| s["name"] == name)
            .with_context(|| format!("no server {name} in /api/servers"))?;
        Ok(s["status"].as_str().unwrap_or_default().to_string())
    }

    pub async fn wait_status(&self, names: &[&str], want: &str) -> anyhow::Result<()> {
        eventually(&format!("{names:?} all {want}"), PATIENCE, || async {
            let servers = self.servers().await?;
            let ok = names.iter().all(|n| {
                servers
                    .iter()
                    .any(|s| s["name"] == *n && s["status"].as_str() == Some(want))
            });
            if !ok {
                bail!("{:#}", Value::from(servers));
            }
            Ok(Some(()))
        })
        .await
    }
}

/// Colours in a screenshot of the whole X display.
pub fn screenshot_colours(png: &Path) -> anyhow::Result<u64> {
    let shot = std::process::Command::new("import")
        .args(["-window", "root"])
        .arg(png)
        .output()
        .context("cannot run `import` (imagemagick)")?;
    if !shot.status.success() {
        bail!("import failed: {}", String::from_utf8_lossy(&shot.stderr));
    }
    let count = std::process::Command::new("identify")
        .args(["-format", "%k"])
        .arg(png)
        .output()
        .context("cannot run `identify` (imagemagick)")?;
    let text = String::from_utf8_lossy(&count.stdout);
    text.trim()
        .parse()
        .with_context(|| format!("identify printed {text:?}"))
}

/// The app as the test runs it: every path it writes under `dir`, so
/// `dir/home` is its HOME (and ~/.config/autostart is `dir/home/.config/autostart`).
pub fn app_command(dir: &Path) -> anyhow::Result<Command> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpool-app"));
    cmd.arg("--dashboard")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("MCPOOL_CONFIG", dir.join("config.json"))
        .env("MCPOOL_LISTEN", "127.0.0.1:0")
        .env("MCPOOL_CACHE_DIR", dir.join("cache"))
        .env("MCPOOL_TOKEN", TOKEN)
        .env("MCPOOL_LOG", "info,rmcp=warn")
        // A dropped server is reported down after 3 s instead of 60.
        .env("MCPOOL_DOWN_NOTICE_SECS", "3")
        // Xvfb has no GPU: WebKit draws in software.
        .env("WEBKIT_DISABLE_COMPOSITING_MODE", "1")
        .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    Ok(cmd)
}

/// The login items (`*.desktop`) the app wrote for "Open at login": the
/// autostart crate puts them in $HOME/.config/autostart; XDG_CONFIG_HOME
/// is checked too, in case a later version honours it.
pub fn autostart_entries(dir: &Path) -> Vec<PathBuf> {
    let home = dir.join("home");
    [home.join(".config/autostart"), home.join("config/autostart")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "desktop"))
        .collect()
}

pub async fn wait_autostart(dir: &Path, present: bool) -> Vec<PathBuf> {
    let what = if present { "a login item" } else { "no login item" };
    let _ = eventually(what, Duration::from_secs(10), || async {
        Ok((autostart_entries(dir).is_empty() != present).then_some(()))
    })
    .await;
    autostart_entries(dir)
}

/// A PNG's pixels as RGBA8, whatever its colour type.
pub fn rgba(png_path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = std::fs::File::open(png_path).with_context(|| format!("cannot open {}", png_path.display()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size().context("image too large")?];
    let info = reader.next_frame(&mut buf)?;
    buf.truncate(info.buffer_size());
    Ok(match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect(),
        png::ColorType::GrayscaleAlpha => buf.chunks(2).flat_map(|p| [p[0], p[0], p[0], p[1]]).collect(),
        png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        other => bail!("{}: unexpected colour type {other:?}", png_path.display()),
    })
}

/// The StatusNotifierItem `dest` registered at `path`, uncached:
/// AppIndicator announces a new icon with its own NewIcon signal, not
/// PropertiesChanged, so a cache would go stale.
pub async fn tray_item(desktop: &zbus::Connection, dest: String, path: String) -> anyhow::Result<zbus::Proxy<'static>> {
    Ok(zbus::proxy::Builder::new(desktop)
        .destination(dest)?
        .path(path)?
        .interface("org.kde.StatusNotifierItem")?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?)
}

/// The image the tray item shows now: AppIndicator names a PNG file
/// (`IconName`, absolute or within `IconThemePath`).
pub async fn shown_icon(item: &zbus::Proxy<'_>) -> anyhow::Result<Vec<u8>> {
    let name: String = item.get_property("IconName").await?;
    let path = if Path::new(&name).is_absolute() {
        PathBuf::from(&name)
    } else {
        let theme: String = item.get_property("IconThemePath").await?;
        Path::new(&theme).join(format!("{name}.png"))
    };
    rgba(&path)
}

/// Waits until the tray item shows `icons/tray/<file>`.
pub async fn wait_icon(item: &zbus::Proxy<'_>, file: &str) -> anyhow::Result<()> {
    let want = rgba(&repo_root().join("icons/tray").join(file))?;
    eventually(&format!("the tray icon {file}"), PATIENCE, || async {
        if shown_icon(item).await? == want {
            return Ok(Some(()));
        }
        let name: String = item.get_property("IconName").await?;
        bail!("IconName {name:?}")
    })
    .await
}

/// The notifications so far, once there are `n` (or after `within`).
pub async fn wait_notes(notes: &Notifications, n: usize, within: Duration) -> Vec<Note> {
    let _ = eventually("notifications", within, || async {
        Ok((notes.recorded().len() >= n).then_some(()))
    })
    .await;
    notes.recorded()
}

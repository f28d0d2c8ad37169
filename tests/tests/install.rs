//! scripts/install.sh, run for real into a temporary prefix and HOME: the
//! binaries land on PATH and run by name, the menu entry passes the
//! freedesktop validator and starts the installed app, the icons are the
//! sizes they claim, a second run changes nothing, an "Open at login" item
//! made by a copy elsewhere is pointed at the installed app, and
//! `--uninstall` takes it all away.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcpool_tests::*;

struct Install {
    dir: TempDir,
}

impl Install {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Install { dir }
    }
    fn prefix(&self) -> PathBuf {
        self.dir.path().join("prefix")
    }
    fn bindir(&self) -> PathBuf {
        self.prefix().join("bin")
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn login_item(&self) -> PathBuf {
        self.home().join(".config/autostart/mcpool.desktop")
    }
    /// `scripts/install.sh --prefix P --from target/debug ARGS` with `path` as PATH.
    fn run(&self, args: &[&str], path: &str) -> Output {
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/install.sh"))
            .arg("--prefix")
            .arg(self.prefix())
            .arg("--from")
            .arg(bin_dir())
            .args(args)
            .env("HOME", self.home())
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/install.sh");
        eprintln!(
            "install.sh {args:?}: {}\nstdout: {}stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
    fn path_with_bindir(&self) -> String {
        format!("{}:{}", self.bindir().display(), system_path())
    }
}

fn system_path() -> String {
    "/usr/local/bin:/usr/bin:/bin".into()
}

/// Every regular file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).expect("under base").display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Width and height from a PNG's IHDR.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", path.display());
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    (be(16), be(20))
}

const ICON_SIZES: [u32; 4] = [32, 128, 256, 512];

#[test]
fn install_puts_mcpool_on_path_and_the_app_in_the_menu() {
    let inst = Install::new("install");
    let bindir = inst.bindir();

    // Not on PATH yet: installed all the same, and the user is told.
    let out = inst.run(&[], &system_path());
    assert!(out.status.success(), "install failed: {}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        bindir.display().to_string(),
        "stdout is the bin dir, for scripts/run.sh"
    );
    assert!(
        stderr(&out).contains(&format!("{} is not on your PATH", bindir.display())),
        "says the bin dir is not on PATH: {}",
        stderr(&out)
    );

    let mut want: Vec<String> = vec![
        "bin/mcpool".into(),
        "bin/mcpool-app".into(),
        "share/applications/mcpool.desktop".into(),
    ];
    want.extend(ICON_SIZES.map(|n| format!("share/icons/hicolor/{n}x{n}/apps/mcpool.png")));
    let mut got = files(&inst.prefix());
    // update-desktop-database's cache, when that tool is installed.
    got.retain(|f| f != "share/applications/mimeinfo.cache");
    want.sort();
    assert_eq!(got, want, "the installed files");

    for name in ["mcpool", "mcpool-app"] {
        // The built binary without its debug info.
        let stripped = inst.dir.path().join(format!("{name}.stripped"));
        let strip = Command::new("strip")
            .args(["--strip-debug", "-o"])
            .arg(&stripped)
            .arg(bin(name))
            .status()
            .expect("strip (binutils)");
        assert!(strip.success());
        let installed = bindir.join(name);
        assert!(
            std::fs::read(&installed).expect("installed binary") == std::fs::read(&stripped).expect("stripped"),
            "{name} is the built binary without debug info"
        );
        let mode = std::fs::metadata(&installed).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "{name}'s mode");
    }
    for n in ICON_SIZES {
        let icon = inst
            .prefix()
            .join(format!("share/icons/hicolor/{n}x{n}/apps/mcpool.png"));
        assert_eq!(png_size(&icon), (n, n), "{}", icon.display());
    }

    // `mcpool` by name, from PATH, as every README snippet runs it.
    let out = Command::new("sh")
        .args(["-c", "command -v mcpool && mcpool --version"])
        .env("PATH", inst.path_with_bindir())
        .output()
        .expect("sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcpool --version from PATH: {text}{}",
        stderr(&out)
    );
    assert_eq!(
        text,
        format!(
            "{}\nmcpool {}\n",
            bindir.join("mcpool").display(),
            env!("CARGO_PKG_VERSION")
        )
    );

    // The menu entry starts the installed app, with the installed icon.
    let entry_path = inst.prefix().join("share/applications/mcpool.desktop");
    let entry = std::fs::read_to_string(&entry_path).expect("desktop entry");
    let exec = format!("Exec={}", bindir.join("mcpool-app").display());
    for line in [
        exec.as_str(),
        "Name=mcpool",
        "Icon=mcpool",
        "Type=Application",
        "Categories=Development;",
    ] {
        assert!(entry.lines().any(|l| l == line), "{line:?} in\n{entry}");
    }
    let check = Command::new("desktop-file-validate")
        .arg(&entry_path)
        .output()
        .expect("desktop-file-validate (Debian package desktop-file-utils; scripts/test-env.sh installs it)");
    assert!(
        check.status.success() && check.stdout.is_empty(),
        "desktop-file-validate: {}{}",
        String::from_utf8_lossy(&check.stdout),
        stderr(&check)
    );

    // A second run, now on PATH: nothing to do, nothing touched, no warning.
    let mtimes = || -> Vec<_> {
        want.iter()
            .map(|f| {
                std::fs::metadata(inst.prefix().join(f))
                    .expect("stat")
                    .modified()
                    .expect("mtime")
            })
            .collect()
    };
    let before = mtimes();
    let out = inst.run(&[], &inst.path_with_bindir());
    assert!(out.status.success(), "second install failed: {}", stderr(&out));
    assert!(
        stderr(&out).contains("already installed and up to date"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("not on your PATH"), "{}", stderr(&out));
    let after = mtimes();
    assert_eq!(before, after, "a second run rewrites nothing");

    // --uninstall removes every file it put there.
    let out = inst.run(&["--uninstall"], &system_path());
    assert!(out.status.success(), "uninstall failed: {}", stderr(&out));
    let mut left = files(&inst.prefix());
    left.retain(|f| f != "share/applications/mimeinfo.cache");
    assert!(left.is_empty(), "left after --uninstall: {left:?}");
}

/// "Open at login" (tauri-plugin-autostart) writes a login item that runs the
/// app it was clicked in. One clicked in ./target/release would keep
/// starting that build: installing points it at the installed app, and
/// uninstalling removes it.
#[test]
fn install_points_open_at_login_at_the_installed_app() {
    let inst = Install::new("install-login");
    let item = inst.login_item();
    std::fs::create_dir_all(item.parent().expect("parent")).expect("autostart dir");
    // Byte for byte what the autostart crate writes (auto-launch 0.6, XDG mode).
    let old = "[Desktop Entry]\nType=Application\nVersion=1.0\nName=mcpool\nComment=mcpool startup script\n\
               Exec=/home/u/mcpool/target/release/mcpool-app \nStartupNotify=false\nTerminal=false";
    std::fs::write(&item, old).expect("login item");

    let out = inst.run(&[], &system_path());
    assert!(out.status.success(), "install failed: {}", stderr(&out));
    let now = std::fs::read_to_string(&item).expect("login item");
    let want = old.replace(
        "/home/u/mcpool/target/release/mcpool-app",
        &inst.bindir().join("mcpool-app").display().to_string(),
    );
    assert_eq!(now.trim_end(), want, "only the Exec line changed");
    assert!(stderr(&out).contains("Open at login now starts"), "{}", stderr(&out));

    // Already right: left alone.
    let out = inst.run(&[], &system_path());
    assert!(
        stderr(&out).contains("already installed and up to date"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&item).expect("login item"), now);

    // Another program's login item of the same name is not ours to touch.
    let other = "[Desktop Entry]\nType=Application\nName=mcpool\nExec=/opt/something-else --flag\n";
    std::fs::write(&item, other).expect("login item");
    let out = inst.run(&[], &system_path());
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&item).expect("login item"), other);
    let out = inst.run(&["--uninstall"], &system_path());
    assert!(out.status.success());
    assert!(
        item.exists(),
        "--uninstall keeps a login item that is not the installed app's"
    );

    std::fs::write(&item, &now).expect("login item");
    let out = inst.run(&["--uninstall"], &system_path());
    assert!(out.status.success());
    assert!(!item.exists(), "--uninstall removes the installed app's login item");
}

#[test]
fn install_without_a_build_says_how_to_build() {
    let inst = Install::new("install-nobuild");
    let empty = inst.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("empty dir");
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(inst.prefix())
        .arg("--from")
        .arg(&empty)
        .env("HOME", inst.home())
        .output()
        .expect("run scripts/install.sh");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "[mcpool] no built mcpool in {}: build first (cargo build --release --locked --workspace --bin mcpool --bin mcpool-app), \
             or run scripts/run.sh, which builds and installs\n",
            empty.display()
        )
    );
    assert!(!inst.prefix().join("bin").exists(), "nothing installed");
}

//! One server's log on disk: its safe file name, the line format, the
//! appender that rotates at [`ROTATE_AT`], and reading both files back.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// A file is rotated to `<name>.log.1` before it grows past this, so a
/// server keeps at most twice this on disk.
pub const ROTATE_AT: u64 = 1024 * 1024;

/// The longest text one line keeps (longer text is cut, with `…`).
pub const MAX_TEXT_BYTES: usize = 8 * 1024;

/// The longest file stem kept whole; a longer one is cut and hashed.
const MAX_STEM: usize = 120;

/// Where one profile's server logs live: `<data dir>/logs/<profile>/`.
pub fn dir_for(data_dir: &Path, profile: &str) -> PathBuf {
    data_dir.join("logs").join(safe_stem(profile))
}

/// `<dir>/<server>.log`, the server's name made safe for a file name.
pub fn file_for(dir: &Path, server: &str) -> PathBuf {
    dir.join(format!("{}.log", safe_stem(server)))
}

/// The rotated file beside `file`: `<server>.log.1`.
pub fn rotated(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}

/// A name as a file stem: `[A-Za-z0-9_.-]` kept, a leading dot and every
/// other byte percent-escaped (so `..` or `a/b` stay inside the folder and
/// two names never share a file); a long result is cut and ends in a hash
/// of the whole name.
pub fn safe_stem(name: &str) -> String {
    let mut out = String::new();
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        return "%".into();
    }
    if out.len() > MAX_STEM {
        let hash = hex::encode(&Sha256::digest(name.as_bytes())[..8]);
        out.truncate(MAX_STEM - hash.len() - 1);
        out.push('~');
        out.push_str(&hash);
    }
    out
}

/// Where a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The server's own stderr.
    Stderr,
    /// mcpool's log about the server.
    Mcpool,
}

/// One line as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    pub time: String,
    pub source: Source,
    /// `info`, `warn`, …: mcpool's lines only.
    pub level: Option<String>,
    pub text: String,
}

impl Line {
    /// The line as written: `<time> stderr <text>` or
    /// `<time> mcpool <LEVEL> <text>`, without its newline.
    pub fn to_file_line(&self) -> String {
        match (&self.source, &self.level) {
            (Source::Mcpool, Some(level)) => format!("{} mcpool {} {}", self.time, level.to_uppercase(), self.text),
            (Source::Mcpool, None) => format!("{} mcpool - {}", self.time, self.text),
            (Source::Stderr, _) => format!("{} stderr {}", self.time, self.text),
        }
    }

    /// Reads a line written by [`Line::to_file_line`]; `None` for anything else.
    pub fn parse(line: &str) -> Option<Line> {
        let (time, rest) = line.split_once(' ')?;
        let (source, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        match source {
            "stderr" => Some(Line {
                time: time.into(),
                source: Source::Stderr,
                level: None,
                text: rest.into(),
            }),
            "mcpool" => {
                let (level, text) = rest.split_once(' ').unwrap_or((rest, ""));
                Some(Line {
                    time: time.into(),
                    source: Source::Mcpool,
                    level: (level != "-").then(|| level.to_lowercase()),
                    text: text.into(),
                })
            }
            _ => None,
        }
    }
}

/// `text` cut to [`MAX_TEXT_BYTES`] at a character boundary, with `…`.
pub fn cut(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Appends lines to one server's file, rotating before it would pass
/// [`ROTATE_AT`]. Files are created 0600. Lines are buffered until
/// [`Appender::flush`] (the writer flushes whenever its queue is empty).
pub struct Appender {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    len: u64,
}

impl Appender {
    pub fn new(path: PathBuf) -> Self {
        Appender {
            path,
            file: None,
            len: 0,
        }
    }

    /// Writes one line (a newline is added).
    pub fn append(&mut self, line: &str) -> std::io::Result<()> {
        let bytes = line.len() as u64 + 1;
        if self.file.is_none() {
            self.open()?;
        }
        if self.len > 0 && self.len + bytes > ROTATE_AT {
            if let Some(mut file) = self.file.take() {
                file.flush()?;
            }
            std::fs::rename(&self.path, rotated(&self.path))?;
            self.open()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        match file.write_all(line.as_bytes()).and_then(|()| file.write_all(b"\n")) {
            Ok(()) => {
                self.len += bytes;
                Ok(())
            }
            Err(e) => {
                // Opened again at the next line: the file may have gone.
                self.file = None;
                Err(e)
            }
        }
    }

    /// Writes out the buffered lines.
    pub fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut().map(BufWriter::flush) {
            Some(Err(e)) => {
                self.file = None;
                Err(e)
            }
            _ => Ok(()),
        }
    }

    fn open(&mut self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            create_private_dir(dir)?;
        }
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        let file = crate::os::files::open_private(&mut options, &self.path)?;
        self.len = file.metadata()?.len();
        self.file = Some(BufWriter::with_capacity(64 * 1024, file));
        Ok(())
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    crate::os::files::create_private_dir(dir)
}

/// The whole retained log of `file`: the rotated file, then the current
/// one. Missing files are empty.
pub fn read_all(file: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    for path in [rotated(file), file.to_path_buf()] {
        match File::open(&path) {
            Ok(mut f) => {
                f.read_to_end(&mut out)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The last `limit` lines of the retained log whose text contains `q`
/// (ignoring case; empty matches all), oldest first, and whether more
/// matched.
pub fn search(file: &Path, q: &str, limit: usize) -> std::io::Result<(Vec<Line>, bool)> {
    let q = q.to_lowercase();
    let mut kept = std::collections::VecDeque::with_capacity(limit.min(1024));
    let mut truncated = false;
    for path in [rotated(file), file.to_path_buf()] {
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for raw in BufReader::new(f).split(b'\n') {
            let raw = raw?;
            let Some(line) = Line::parse(&String::from_utf8_lossy(&raw)) else {
                continue;
            };
            if !q.is_empty() && !line.text.to_lowercase().contains(&q) {
                continue;
            }
            if kept.len() == limit {
                kept.pop_front();
                truncated = true;
            }
            if limit > 0 {
                kept.push_back(line);
            } else {
                truncated = true;
            }
        }
    }
    Ok((kept.into(), truncated))
}

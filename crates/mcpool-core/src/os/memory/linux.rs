//! Linux: glibc's free heap returned (`malloc_trim`), and the program's own
//! clean file pages unmapped (`madvise(MADV_DONTNEED)`).
//!
//! Unmapping is safe exactly for a mapping of the program's file that can
//! not be written and holds no private copy of a page (smaps'
//! `Anonymous: 0 kB`): each of its pages is the file's, so the kernel maps
//! the same bytes back from the page cache on their next use, as it would
//! after reclaiming them under memory pressure. Relocated data (RELRO,
//! `.data`) holds private copies and is never touched.

use std::ops::Range;

pub(super) fn give_back() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free pages; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
    let (Ok(exe), Ok(smaps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/smaps"),
    ) else {
        return;
    };
    for range in clean_mappings(&smaps, &exe.to_string_lossy()) {
        // SAFETY: `range` is a whole mapping of `exe` that is not writable
        // and has no private page (see the module's comment): dropping its
        // pages loses nothing, they are mapped again from the file when used.
        unsafe {
            libc::madvise(range.start as *mut libc::c_void, range.len(), libc::MADV_DONTNEED);
        }
    }
}

/// The address ranges of `/proc/self/smaps` mappings of the file `path`
/// that are not writable and hold no private (anonymous) page.
fn clean_mappings(smaps: &str, path: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut current: Option<Range<usize>> = None;
    for line in smaps.lines() {
        if let Some(header) = Mapping::parse(line) {
            current = (header.path == path && !header.perms.contains('w')).then_some(header.range);
            continue;
        }
        let Some(kb) = line.strip_prefix("Anonymous:") else {
            continue;
        };
        if let Some(range) = current.take() {
            if kb.trim() == "0 kB" {
                out.push(range);
            }
        }
    }
    out
}

/// One header line of smaps: `start-end perms offset dev inode path`.
struct Mapping<'a> {
    range: Range<usize>,
    perms: &'a str,
    path: &'a str,
}

impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let (range, rest) = line.split_once(' ')?;
        let (start, end) = range.split_once('-')?;
        let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
        let mut rest = rest.trim_start();
        let mut fields = [""; 4];
        for field in &mut fields {
            let (value, after) = rest.split_once(' ').unwrap_or((rest, ""));
            *field = value;
            rest = after.trim_start();
        }
        let [perms, _offset, _dev, _inode] = fields;
        Some(Mapping {
            range,
            perms,
            path: rest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An smaps text of `(range, perms, path, anonymous kB)` mappings.
    fn smaps(mappings: &[(&str, &str, &str, u32)]) -> String {
        mappings
            .iter()
            .map(|(range, perms, path, anon)| {
                format!("{range} {perms} 00000000 fd:01 1234    {path}\nSize: 64 kB\nAnonymous: {anon} kB\n")
            })
            .collect()
    }

    /// The program's four mappings (read-only, code, RELRO, data), libc's
    /// code and an anonymous mapping.
    fn sample() -> String {
        let exe = "/opt/my app/mcpool";
        smaps(&[
            ("55d0c0a00000-55d0c0a10000", "r--p", exe, 0),
            ("55d0c0a10000-55d0c1a10000", "r-xp", exe, 0),
            ("55d0c1a10000-55d0c1b10000", "r--p", exe, 12),
            ("55d0c1b10000-55d0c1b20000", "rw-p", exe, 0),
            (
                "7f0000000000-7f0000100000",
                "r-xp",
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                0,
            ),
            ("7f0000200000-7f0000300000", "rw-p", "", 1024),
        ])
    }

    #[test]
    fn only_the_programs_read_only_mappings_without_private_pages_are_given_back() {
        assert_eq!(
            clean_mappings(&sample(), "/opt/my app/mcpool"),
            vec![0x55d0c0a00000..0x55d0c0a10000, 0x55d0c0a10000..0x55d0c1a10000],
            "the relocated (RELRO) and the writable mapping stay, and so do the libraries"
        );
        assert!(clean_mappings(&sample(), "/opt/other").is_empty());
    }

    /// The `Rss:` of the smaps mapping that holds `address`, in kB.
    fn resident_kb(address: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some(m) = Mapping::parse(line) {
                inside = m.range.contains(&address);
            } else if let Some(kb) = line.strip_prefix("Rss:").filter(|_| inside) {
                return kb.trim().trim_end_matches(" kB").parse().expect("a number");
            }
        }
        panic!("no mapping holds {address:x}")
    }

    #[test]
    fn this_processs_code_is_given_back_and_still_runs() {
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let code = clean_mappings(&smaps, &exe.to_string_lossy());
        let here = this_processs_code_is_given_back_and_still_runs as *const () as usize;
        assert!(
            code.iter().any(|r| r.contains(&here)),
            "{code:x?} holds this function at {here:x}"
        );
        let before = resident_kb(here);
        give_back();
        let after = resident_kb(here);
        assert!(
            after < before / 2,
            "code resident: {before} kB before, {after} kB after"
        );
        assert_eq!(clean_mappings(&sample(), "/opt/my app/mcpool").len(), 2, "and runs on");
    }
}

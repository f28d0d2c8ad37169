//! Windows permissions: "the user alone" is a protected DACL with one entry
//! for the current user's SID (built from SDDL, `owner_only_sddl`), set by
//! path before any byte is written; any other mode leaves the ACL the
//! folder gives. A rename over a file that another program holds open
//! without `FILE_SHARE_DELETE` fails with a sharing violation (or access
//! denied) instead of succeeding as on Unix: that is the busy error the
//! replace waits out.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use windows_sys::Win32::Foundation::{
    CloseHandle, LocalFree, ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, HANDLE,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSecurityDescriptorToStringSecurityDescriptorW, ConvertSidToStringSidW,
    ConvertStringSecurityDescriptorToSecurityDescriptorW, GetNamedSecurityInfoW, SetNamedSecurityInfoW,
    SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    GetSecurityDescriptorDacl, GetTokenInformation, TokenUser, ACL, DACL_SECURITY_INFORMATION,
    PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::{owner_only_sddl, PRIVATE};

/// Whether `mode` means "the user alone".
fn private(mode: u32) -> bool {
    mode & 0o077 == 0
}

pub fn create_new(options: OpenOptions, path: &Path, mode: u32) -> std::io::Result<File> {
    let file = options.open(path)?;
    if private(mode) {
        if let Err(e) = set_owner_only(path, false) {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
    }
    Ok(file)
}

pub fn open_private(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    let existed = path.exists();
    let file = options.open(path)?;
    if !existed {
        set_owner_only(path, false)?;
    }
    Ok(file)
}

pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let existed = dir.is_dir();
    std::fs::create_dir_all(dir)?;
    if !existed {
        set_owner_only(dir, true)?;
    }
    Ok(())
}

pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    if private(mode) {
        set_owner_only(path, path.is_dir())
    } else {
        Ok(())
    }
}

/// [`PRIVATE`] when the file's DACL is the one `set_owner_only` gives,
/// else 0o644 ("as the folder gives").
pub fn mode_of(path: &Path) -> std::io::Result<u32> {
    let ours = owner_only_sddl(&current_user_sid()?, path.is_dir());
    Ok(if dacl_sddl(path)? == ours { PRIVATE } else { 0o644 })
}

pub fn is_busy(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error().map(|c| c as u32),
        Some(ERROR_SHARING_VIOLATION | ERROR_ACCESS_DENIED | ERROR_LOCK_VIOLATION)
    )
}

fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(Some(0)).collect()
}

/// Frees what the system allocated with `LocalAlloc` when it goes.
struct Local(*mut core::ffi::c_void);

impl Drop for Local {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from a call that allocates with LocalAlloc.
            unsafe { LocalFree(self.0) };
        }
    }
}

fn win32(code: u32) -> std::io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(code as i32))
    }
}

/// Gives `path` a protected DACL granting the current user alone.
fn set_owner_only(path: &Path, folder: bool) -> std::io::Result<()> {
    let sddl = wide(OsStr::new(&owner_only_sddl(&current_user_sid()?, folder)));
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor.
    if unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        )
    } == 0
    {
        return Err(std::io::Error::last_os_error());
    }
    let sd = Local(sd);
    let (mut present, mut defaulted) = (0, 0);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    // SAFETY: `sd` is a valid descriptor; `dacl` points into it and lives as long.
    if unsafe { GetSecurityDescriptorDacl(sd.0, &mut present, &mut dacl, &mut defaulted) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let name = wide(path.as_os_str());
    // SAFETY: `name` is NUL-terminated, `dacl` valid while `sd` lives.
    win32(unsafe {
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            dacl,
            std::ptr::null(),
        )
    })
}

/// The DACL of `path` as SDDL (`D:P(A;;FA;;;S-…)`).
pub(super) fn dacl_sddl(path: &Path) -> std::io::Result<String> {
    let name = wide(path.as_os_str());
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor.
    win32(unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut sd,
        )
    })?;
    let sd = Local(sd);
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sd` is valid; `text` receives a LocalAlloc'd NUL-terminated string.
    if unsafe {
        ConvertSecurityDescriptorToStringSecurityDescriptorW(
            sd.0,
            SDDL_REVISION_1,
            DACL_SECURITY_INFORMATION,
            &mut text,
            std::ptr::null_mut(),
        )
    } == 0
    {
        return Err(std::io::Error::last_os_error());
    }
    let text = Local(text.cast());
    // SAFETY: a NUL-terminated UTF-16 string from the call above.
    Ok(unsafe { from_wide(text.0.cast()) })
}

/// # Safety
/// `p` points to a NUL-terminated UTF-16 string.
unsafe fn from_wide(p: *const u16) -> String {
    let mut len = 0;
    // SAFETY: the caller's promise: the string ends with a NUL.
    while unsafe { *p.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: `len` units were just read.
    String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The current user's SID as text (`S-1-5-21-…`), read once from the
/// process token.
pub(super) fn current_user_sid() -> std::io::Result<String> {
    static SID: OnceLock<String> = OnceLock::new();
    if let Some(sid) = SID.get() {
        return Ok(sid.clone());
    }
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; `token` receives a handle we close.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read = (|| {
        let mut len = 0u32;
        // SAFETY: a size query (no buffer): fails with the size needed.
        unsafe { GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &mut len) };
        // u64s keep the TOKEN_USER at the buffer's start aligned.
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        // SAFETY: `buf` holds `len` bytes.
        if unsafe { GetTokenInformation(token, TokenUser, buf.as_mut_ptr().cast(), len, &mut len) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the call filled a TOKEN_USER at the start of `buf`.
        let user = unsafe { &*buf.as_ptr().cast::<TOKEN_USER>() };
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: the SID points into `buf`; `text` receives a LocalAlloc'd string.
        if unsafe { ConvertSidToStringSidW(user.User.Sid, &mut text) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        let text = Local(text.cast());
        // SAFETY: a NUL-terminated UTF-16 string from the call above.
        Ok(unsafe { from_wide(text.0.cast()) })
    })();
    // SAFETY: the handle OpenProcessToken gave.
    unsafe { CloseHandle(token) };
    let sid = read?;
    Ok(SID.get_or_init(|| sid).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the real calls (run under Wine by `scripts/windows.sh test`).
    #[test]
    fn a_private_file_has_a_protected_dacl_for_the_user_alone() {
        let dir = crate::scratch::scratch_dir("acl-private");
        let path = dir.join("token");
        super::super::write_private(&path, b"secret").unwrap();
        let sid = current_user_sid().unwrap();
        assert!(sid.starts_with("S-1-5-"), "{sid}");
        super::super::create_private_dir(&dir.join("logs")).unwrap();
        // Wine accepts the DACL but does not keep it (see `assert_private`).
        if std::env::var_os("WINEPREFIX").is_none() {
            assert_eq!(dacl_sddl(&path).unwrap(), owner_only_sddl(&sid, false));
            assert_eq!(mode_of(&path).unwrap(), PRIVATE);
            assert_eq!(dacl_sddl(&dir.join("logs")).unwrap(), owner_only_sddl(&sid, true));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A program holding the target open without `FILE_SHARE_DELETE` makes
    /// the replace fail with the sentence after the wait; once it lets go
    /// the replace goes through.
    #[test]
    fn a_replace_over_a_file_held_open_names_the_file() {
        use std::os::windows::fs::OpenOptionsExt;
        let dir = crate::scratch::scratch_dir("acl-busy");
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("config.json");
        std::fs::write(&target, b"old").unwrap();
        let tmp = dir.join("config.json.new");
        std::fs::write(&tmp, b"new").unwrap();
        // FILE_SHARE_READ only, as an editor or scanner might.
        let held = OpenOptions::new().read(true).share_mode(1).open(&target).unwrap();
        let err = super::super::rename_over(&tmp, &target).unwrap_err();
        let sentence = err.to_string();
        assert!(
            sentence.contains("config.json: another program keeps it open"),
            "{sentence}"
        );
        drop(held);
        super::super::rename_over(&tmp, &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

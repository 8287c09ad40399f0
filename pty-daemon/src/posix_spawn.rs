//! glibc's `posix_spawn`, for what `std::process::Command` cannot ask of it.
//!
//! On stable Rust, that is a new session and a controlling terminal.
//! Everything the child does is one of glibc's spawn steps. No Rust code
//! runs in it.

use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::ptr;

use rustix::process::Pid;

/// One program to start.
pub struct Spawn<'a> {
    /// The file to execute (no PATH search).
    pub path: &'a CStr,
    /// argv, argv[0] included.
    pub args: &'a [CString],
    /// The whole environment, as `NAME=value`.
    pub vars: &'a [CString],
    /// The directory it starts in.
    pub cwd: &'a CStr,
    /// A terminal to open as stdin, stdout and stderr.
    ///
    /// The child leads a new session, so it becomes the child's controlling
    /// terminal.
    pub terminal: &'a CStr,
}

impl Spawn<'_> {
    /// Starts it, with every signal at its default action and none blocked.
    ///
    /// It returns once the exec has succeeded or failed. glibc waits for
    /// the child to exec, and reports its error.
    pub fn run(&self) -> io::Result<Pid> {
        let attributes = Attributes::new()?;
        let mut actions = FileActions::new()?;
        actions.chdir(self.cwd)?;
        actions.open(0, self.terminal, libc::O_RDWR)?;
        actions.dup2(0, 1)?;
        actions.dup2(0, 2)?;
        let args = null_terminated(self.args);
        let vars = null_terminated(self.vars);
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer is valid for the call. The attributes and
        // file actions are initialised and live until dropped below. argv
        // and envp are NULL-terminated arrays of C strings that outlive it.
        let errno = unsafe {
            libc::posix_spawn(
                &mut pid,
                self.path.as_ptr(),
                actions.as_ptr(),
                attributes.as_ptr(),
                args.as_ptr().cast(),
                vars.as_ptr().cast(),
            )
        };
        check(errno)?;
        Pid::from_raw(pid).ok_or_else(|| io::Error::other("posix_spawn returned pid 0"))
    }
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|string| string.as_ptr())
        .chain([ptr::null()])
        .collect()
}

fn check(errno: libc::c_int) -> io::Result<()> {
    match errno {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// `posix_spawnattr_t`: a new session, an empty signal mask, and every
/// signal at its default action.
///
/// Ignored dispositions survive exec. A launcher's nohup must not leave
/// sessions deaf to hang-ups. Rust ignores SIGPIPE in the daemon. glibc's
/// spawn ignores its own internal signals in the child unless told to
/// reset them.
struct Attributes(Box<libc::posix_spawnattr_t>);

impl Attributes {
    fn new() -> io::Result<Self> {
        let mut raw = Box::new(MaybeUninit::<libc::posix_spawnattr_t>::uninit());
        // SAFETY: initialises the attributes in place.
        check(unsafe { libc::posix_spawnattr_init(raw.as_mut_ptr()) })?;
        // SAFETY: initialised just above; from here on dropped with destroy.
        let mut attributes = Self(unsafe { raw.assume_init() });
        let attr = attributes.0.as_mut();
        let flags = libc::POSIX_SPAWN_SETSID
            | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short
            | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short;
        // SAFETY: `attr` is initialised; the sets are copied in.
        unsafe {
            check(libc::posix_spawnattr_setsigdefault(
                attr,
                &signal_set(libc::sigfillset),
            ))?;
            check(libc::posix_spawnattr_setsigmask(
                attr,
                &signal_set(libc::sigemptyset),
            ))?;
            check(libc::posix_spawnattr_setflags(attr, flags))?;
        }
        Ok(attributes)
    }

    fn as_ptr(&self) -> *const libc::posix_spawnattr_t {
        &*self.0
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once.
        unsafe { libc::posix_spawnattr_destroy(self.0.as_mut()) };
    }
}

/// A signal set initialised by `init` (`sigemptyset` or `sigfillset`).
fn signal_set(init: unsafe extern "C" fn(*mut libc::sigset_t) -> libc::c_int) -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: both initialise the whole set and cannot fail on a valid
    // pointer.
    unsafe {
        init(set.as_mut_ptr());
        set.assume_init()
    }
}

/// `posix_spawn_file_actions_t`: steps the child takes, in order, before
/// the exec.
struct FileActions(Box<libc::posix_spawn_file_actions_t>);

impl FileActions {
    fn new() -> io::Result<Self> {
        let mut raw = Box::new(MaybeUninit::<libc::posix_spawn_file_actions_t>::uninit());
        // SAFETY: initialises the actions in place.
        check(unsafe { libc::posix_spawn_file_actions_init(raw.as_mut_ptr()) })?;
        // SAFETY: initialised just above; from here on dropped with destroy.
        Ok(Self(unsafe { raw.assume_init() }))
    }

    fn raw(&mut self) -> *mut libc::posix_spawn_file_actions_t {
        self.0.as_mut()
    }

    fn chdir(&mut self, dir: &CStr) -> io::Result<()> {
        // SAFETY: initialised actions; glibc copies the path.
        check(unsafe { libc::posix_spawn_file_actions_addchdir_np(self.raw(), dir.as_ptr()) })
    }

    fn open(&mut self, fd: libc::c_int, path: &CStr, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: initialised actions; glibc copies the path.
        check(unsafe {
            libc::posix_spawn_file_actions_addopen(self.raw(), fd, path.as_ptr(), flags, 0)
        })
    }

    fn dup2(&mut self, from: libc::c_int, to: libc::c_int) -> io::Result<()> {
        // SAFETY: initialised actions.
        check(unsafe { libc::posix_spawn_file_actions_adddup2(self.raw(), from, to) })
    }

    fn as_ptr(&self) -> *const libc::posix_spawn_file_actions_t {
        &*self.0
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once.
        unsafe { libc::posix_spawn_file_actions_destroy(self.0.as_mut()) };
    }
}

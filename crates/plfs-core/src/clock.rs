//! Process-wide ordering clock, host name and random ids.
//!
//! Every write and truncate gets a timestamp from [`next_ts`]: wall-clock nanoseconds, bumped so that
//! it is strictly greater than every timestamp this process handed out before. Overlapping writes
//! are resolved by these timestamps (later wins); docs/design.md gives the rules and tie-breaks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static LAST: AtomicU64 = AtomicU64::new(0);

/// Wall-clock time in nanoseconds since the epoch.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// The kernel's coarse wall clock in nanoseconds since the epoch (`CLOCK_REALTIME_COARSE`, read
/// without a system call): the clock a local file system takes its timestamps from, advancing
/// once a tick.
pub fn coarse_now_ns() -> i128 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

/// Nanoseconds from `t_ns` (a file time, ns since the epoch; one before the epoch counts as the
/// epoch) to now; 0 for a time in the future.
pub fn age_ns(t_ns: i64) -> u64 {
    now_ns().saturating_sub(t_ns.max(0) as u64)
}

/// A timestamp strictly greater than any other this process has returned.
pub fn next_ts() -> u64 {
    let now = now_ns();
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

/// A random 64-bit value from the kernel (getrandom), never zero.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let mut filled = 0;
    while filled < 8 {
        match rustix::rand::getrandom(&mut b[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(_) => {
                // Fall back to time and pid mixing; uniqueness, not secrecy, is what we need.
                let x = now_ns() ^ (u64::from(rustix::process::getpid().as_raw_nonzero().get() as u32) << 32);
                return splitmix(x ^ LAST.fetch_add(1, Ordering::Relaxed)).max(1);
            }
        }
    }
    u64::from_le_bytes(b).max(1)
}

/// `N` random non-zero 64-bit values from one getrandom call.
pub fn random_u64s<const N: usize>() -> [u64; N] {
    let mut b = vec![0u8; 8 * N];
    let mut filled = 0;
    while filled < b.len() {
        match rustix::rand::getrandom(&mut b[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(_) => return std::array::from_fn(|_| random_u64()),
        }
    }
    std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")).max(1))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The host name used for hostdirs, shadow choice and log names: `$PLFS_HOSTNAME` if set, else
/// the kernel's node name. Dots and slashes are kept out of the way of the name grammar. Read once,
/// at the first use in the process (a 1-N create asks for it at every refresh of its directory).
pub fn hostname() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| match std::env::var("PLFS_HOSTNAME").ok().filter(|h| !h.is_empty()) {
        Some(h) => sanitize_host(&h),
        None => sanitize_host(&rustix::system::uname().nodename().to_string_lossy()),
    })
}

fn sanitize_host(h: &str) -> String {
    let s: String = h
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect();
    if s.is_empty() {
        "localhost".into()
    } else {
        s
    }
}

/// The calling process's pid.
pub fn pid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

#[cfg(test)]
mod tests {
    #[test]
    fn ts_strictly_increasing() {
        let mut last = 0;
        for _ in 0..10000 {
            let t = super::next_ts();
            assert!(t > last);
            last = t;
        }
        assert_ne!(super::random_u64(), super::random_u64());
    }
}

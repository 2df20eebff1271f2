//! A closed writer's data log against its index log (format.md §3): its header, and the frame
//! before each write's data in a framed log. Readers of a closed writer go straight to the data
//! its index records point at, so a damaged header or frame changes nothing they read (until
//! the frames are needed: a crash of a later writer of the log, a recovery); fsck reports it,
//! where before it said nothing (issue 50's probe, `tests/corruption_kinds.rs`: 512 changed
//! bytes in data log headers and frames read exactly and fsck found none).

use super::index_log::IndexScan;
use super::report::{Kind, Repair, Report};
use super::writer::WriterCheck;
use crate::format::{self, Frame, LogHeader};
use crate::sys::Access;

/// Checks writer `ck`'s data log header and frames against its index log's header and records.
pub(super) fn check_frames(ck: &WriterCheck, scan: &IndexScan, rep: &mut Report) {
    let (Some(d), Some(Ok(ih))) = (&ck.w.data, &scan.header) else {
        return;
    };
    let push = |rep: &mut Report, msg: String| {
        rep.push(
            Kind::DamagedDataLog,
            true,
            &d.path,
            format!("{}: {msg}", ck.wname),
            Repair::Manual("restore the data log (readers still read the data its index records point at)".into()),
        );
    };
    let Ok(f) = d.dir.open_file(&d.name, Access::Read) else {
        return;
    };
    let mut hb = [0u8; format::DATA_HEADER_LEN];
    let n = f.pread_full(&mut hb, 0).unwrap_or(0);
    let dh = match LogHeader::decode(&d.path, &hb[..n], format::DATA_MAGIC) {
        Ok(h) => h,
        Err(e) => return push(rep, format!("data log header: {e}")),
    };
    if (dh.writer_id, dh.open_ns, dh.pid, dh.flags) != (ih.writer_id, ih.open_ns, ih.pid, ih.flags) {
        return push(rep, "the data log's header does not match its index log's".into());
    }
    if dh.flags & format::LOG_FLAG_FRAMED == 0 {
        return; // a compaction's log: no frames
    }
    let fl = format::FRAME_LEN as u64;
    let mut fb = [0u8; format::FRAME_LEN];
    let bad = scan.records.iter().find(|r| {
        let whole = r.physical_off >= fl && f.pread_full(&mut fb, r.physical_off - fl).is_ok_and(|n| n == fb.len());
        let frame = whole.then(|| Frame::decode(&fb)).flatten();
        !frame.is_some_and(|fr| {
            (u64::from(fr.length), fr.logical_off, fr.ts, fr.data_crc) == (r.length, r.logical_off, r.ts, r.data_crc)
        })
    });
    if let Some(r) = bad {
        push(
            rep,
            format!(
                "the frame of the write at logical offset {} ({} bytes) is damaged or disagrees with its index record",
                r.logical_off, r.length
            ),
        );
    }
}

//! The runtime's announcement of its inject handler thread, so that `tdmap run` knows
//! that thread by construction rather than by its name after the fact.
//!
//! `tdmap run` makes a pipe and passes its write end's number in the inject settings
//! ([`crate::inject::Settings::announce_fd`]). In the program, before `main`, the
//! runtime's constructor starts the handler thread and does not return until that
//! thread has written one [`Announcement`] with its own tid; when the runtime decides
//! not to inject, the constructor writes [`Announcement::NoHandler`] itself. Then it
//! closes the descriptor (children never inherit it), so the tool reads one message
//! and EOF. The message is therefore in the pipe before the program's `main` runs,
//! and before the program creates any thread of its own.
//!
//! Layout: 16 bytes, native endianness (the tool and the program share the machine):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | [`MAGIC`] |
//! | 4..8 | kind: [`KIND_HANDLER`] or [`KIND_NO_HANDLER`] |
//! | 8..12 | pid of the announcing process |
//! | 12..16 | handler: its tid; no handler: the errno that stopped it, 0 for none |

use crate::WireError;

/// Marks an announcement ("TDIA"); a different magic would be a different version.
pub const MAGIC: u32 = 0x5444_4941;
/// Size of an announcement in bytes.
pub const BYTES: usize = 16;
/// Kind: the handler thread runs, with the tid given.
pub const KIND_HANDLER: u32 = 1;
/// Kind: the runtime does not inject in this process.
pub const KIND_NO_HANDLER: u32 = 2;

/// What the runtime says about its handler thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announcement {
    /// The handler thread runs: leave `tid` out of the program's threads.
    Handler {
        /// The program's process id.
        pid: u32,
        /// The handler thread's id (`gettid`).
        tid: u32,
    },
    /// No handler thread: nothing injects.
    NoHandler {
        /// The program's process id.
        pid: u32,
        /// Why: the errno of the step that failed (userfaultfd, thread creation), 0 when
        /// there was no error.
        errno: u32,
    },
}

impl Announcement {
    /// The message's bytes.
    pub fn encode(&self) -> [u8; BYTES] {
        let (kind, pid, last) = match *self {
            Announcement::Handler { pid, tid } => (KIND_HANDLER, pid, tid),
            Announcement::NoHandler { pid, errno } => (KIND_NO_HANDLER, pid, errno),
        };
        let mut b = [0u8; BYTES];
        for (i, v) in [MAGIC, kind, pid, last].into_iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    /// Decodes the first [`BYTES`] of `b`.
    pub fn decode(b: &[u8]) -> Result<Announcement, WireError> {
        const WHAT: &str = "handler announcement";
        let Some(b) = b.get(..BYTES) else {
            return Err(WireError::Truncated {
                what: WHAT,
                need: BYTES,
                got: b.len(),
            });
        };
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[i * 4..i * 4 + 4]);
            u32::from_ne_bytes(w)
        };
        let (magic, kind, pid, last) = (word(0), word(1), word(2), word(3));
        if magic != MAGIC {
            return Err(WireError::BadMagic {
                what: WHAT,
                expected: MAGIC,
                found: magic,
            });
        }
        let zero = |field: &'static str| WireError::OutOfRange {
            field,
            value: "0".into(),
        };
        if pid == 0 {
            return Err(zero("announcement pid"));
        }
        match kind {
            KIND_HANDLER if last == 0 => Err(zero("announcement tid")),
            KIND_HANDLER => Ok(Announcement::Handler { pid, tid: last }),
            KIND_NO_HANDLER => Ok(Announcement::NoHandler { pid, errno: last }),
            kind => Err(WireError::UnknownKind { what: WHAT, kind }),
        }
    }
}

/// The tool's side of the pipe, without the I/O: feed it whatever each `read` returned,
/// and call [`AnnouncementReader::finish`] at EOF.
///
/// The first whole message decides; bytes after it are ignored (the runtime writes one
/// message and closes, so there are none).
#[derive(Debug, Clone, Default)]
pub struct AnnouncementReader {
    buf: [u8; BYTES],
    len: usize,
}

impl AnnouncementReader {
    /// A reader that has seen nothing.
    pub fn new() -> AnnouncementReader {
        AnnouncementReader::default()
    }

    /// Takes the next bytes read from the pipe. None while the message is incomplete;
    /// then its decoding, the same on every later call.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<Result<Announcement, WireError>> {
        let take = bytes.len().min(BYTES - self.len);
        self.buf[self.len..self.len + take].copy_from_slice(&bytes[..take]);
        self.len += take;
        self.result()
    }

    /// The announcement once a whole message was fed, else None.
    pub fn result(&self) -> Option<Result<Announcement, WireError>> {
        (self.len == BYTES).then(|| Announcement::decode(&self.buf))
    }

    /// The outcome once the pipe reached EOF: the announcement, or
    /// [`WireError::NoAnnouncement`] when nothing came (the runtime is not loaded in the
    /// program), or [`WireError::Truncated`] when the message was cut.
    pub fn finish(&self) -> Result<Announcement, WireError> {
        match self.len {
            0 => Err(WireError::NoAnnouncement),
            _ => Announcement::decode(&self.buf[..self.len]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn both_kinds_round_trip_and_zero_ids_are_refused() {
        for a in [
            Announcement::Handler { pid: 10, tid: 11 },
            Announcement::NoHandler { pid: 10, errno: 0 },
            Announcement::NoHandler { pid: 10, errno: 38 },
        ] {
            assert_eq!(Announcement::decode(&a.encode()), Ok(a));
        }
        let no_tid = Announcement::Handler { pid: 10, tid: 0 }.encode();
        assert!(Announcement::decode(&no_tid).is_err());
        let no_pid = Announcement::NoHandler { pid: 0, errno: 0 }.encode();
        assert!(Announcement::decode(&no_pid).is_err());
    }

    #[test]
    fn the_reader_waits_for_the_whole_message_and_tells_eof_cases_apart() {
        let msg = Announcement::Handler { pid: 5, tid: 6 }.encode();
        let mut r = AnnouncementReader::new();
        assert_eq!(r.finish(), Err(WireError::NoAnnouncement));
        assert_eq!(r.feed(&msg[..3]), None);
        assert!(matches!(
            r.finish(),
            Err(WireError::Truncated { got: 3, .. })
        ));
        assert_eq!(r.feed(&[]), None);
        let done = Ok(Announcement::Handler { pid: 5, tid: 6 });
        assert_eq!(r.feed(&msg[3..]), Some(done.clone()));
        assert_eq!(
            r.feed(b"more"),
            Some(done.clone()),
            "later bytes are ignored"
        );
        assert_eq!(r.finish(), done);
    }

    fn announcement() -> impl Strategy<Value = Announcement> {
        prop_oneof![
            (1..=u32::MAX, 1..=u32::MAX).prop_map(|(pid, tid)| Announcement::Handler { pid, tid }),
            (1..=u32::MAX, any::<u32>())
                .prop_map(|(pid, errno)| Announcement::NoHandler { pid, errno }),
        ]
    }

    proptest! {
        #[test]
        fn random_bytes_decode_or_err(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(a) = Announcement::decode(&b) {
                prop_assert_eq!(&a.encode()[..], &b[..BYTES]);
            }
            let mut r = AnnouncementReader::new();
            let _ = r.feed(&b);
            let _ = r.finish();
        }

        #[test]
        fn a_truncated_message_is_an_error(a in announcement(), cut in 0..BYTES) {
            let b = a.encode();
            let truncated = matches!(
                Announcement::decode(&b[..cut]),
                Err(WireError::Truncated { .. })
            );
            prop_assert!(truncated);
            let mut r = AnnouncementReader::new();
            prop_assert_eq!(r.feed(&b[..cut]), None);
            prop_assert!(r.finish().is_err());
        }

        #[test]
        fn a_bit_flip_is_caught_or_changes_one_field(a in announcement(), bit in 0..BYTES * 8) {
            let mut b = a.encode();
            b[bit / 8] ^= 1 << (bit % 8);
            if let Ok(d) = Announcement::decode(&b) {
                // Only the pid or the last word can change unnoticed.
                prop_assert!(bit >= 64);
                prop_assert_ne!(d, a);
            }
        }

        #[test]
        fn the_reader_gives_the_same_answer_however_the_reads_split(
            a in announcement(),
            splits in proptest::collection::vec(0..=BYTES, 0..5),
        ) {
            let b = a.encode();
            let mut cuts: Vec<usize> = splits;
            cuts.push(0);
            cuts.push(BYTES);
            cuts.sort();
            let mut r = AnnouncementReader::new();
            let mut got = None;
            for w in cuts.windows(2) {
                got = r.feed(&b[w[0]..w[1]]);
            }
            prop_assert_eq!(got, Some(Ok(a)));
            prop_assert_eq!(r.finish(), Ok(a));
        }
    }
}

//! Opening a container without doing I/O: a push decoder that says which bytes
//! it needs, takes them, and answers with the decoded footer.
//!
//! ```text
//! let mut decoder = OpenDecoder::new(Some(len));       // or None: use a suffix read
//! loop {
//!     match decoder.try_decode()? {
//!         DecodeResult::NeedsData(request) => { /* read it */ decoder.push(&bytes)?; }
//!         DecodeResult::Opened(container) => break container,
//!     }
//! }
//! ```
//!
//! The first request is the last `min(len, 64 KiB)` bytes. When the footer is
//! larger than that, exactly one more request follows. Two reads at most,
//! whatever the size.

use std::ops::Range;

use crate::constants::{HEADER_LEN, TAIL_PROBE_LEN, TRAILER_LEN};
use crate::error::{FormatError, Result};
use crate::footer::{CollectionFooter, DecodeLimits};
use crate::frame::{Trailer, check_header, not_atlas};

/// A read the decoder needs before it can go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadRequest {
    /// Absolute byte range of the container.
    Range(Range<u64>),
    /// The last `len` bytes (or the whole object if it is shorter), for a
    /// backend that reads suffixes when the container's length is not known.
    Suffix {
        /// How many bytes from the end.
        len: u64,
    },
}

/// What [`OpenDecoder::try_decode`] answers.
#[derive(Debug)]
pub enum DecodeResult {
    /// Read this and [`push`](OpenDecoder::push) it (or [`push_suffix`](OpenDecoder::push_suffix)).
    NeedsData(ReadRequest),
    /// The container is open.
    Opened(OpenedContainer),
}

/// A decoded, validated container footer and where things are.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedContainer {
    /// The validated footer.
    pub footer: CollectionFooter,
    /// Total container length in bytes.
    pub container_len: u64,
    /// Compressed footer length in bytes (the trailer's `footer_size`).
    pub footer_len: u64,
    /// Whether the leading header was checked (only when the first read covered it).
    pub header_checked: bool,
}

impl OpenedContainer {
    /// Offset of the footer's first byte.
    pub fn footer_offset(&self) -> u64 {
        self.container_len
            .saturating_sub(TRAILER_LEN)
            .saturating_sub(self.footer_len)
    }
}

/// The sans-IO open of a container.
#[derive(Debug)]
pub struct OpenDecoder {
    limits: DecodeLimits,
    probe_len: u64,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Waiting for the tail probe.
    Probe {
        len: Option<u64>,
        buf: Vec<u8>,
        complete: bool,
    },
    /// The probe missed the front of the footer; waiting for it.
    Rest {
        len: Option<u64>,
        /// The probe, which ends the container.
        probe: Vec<u8>,
        /// Bytes wanted in front of the probe (or, by suffix, in total).
        want: u64,
        buf: Vec<u8>,
        complete: bool,
    },
    /// Answered (or failed); nothing more to do.
    Finished,
}

impl OpenDecoder {
    /// A decoder for a container of `len` bytes, or of unknown length (then it
    /// asks for suffixes and learns the length from the footer).
    pub fn new(len: Option<u64>) -> Self {
        Self {
            limits: DecodeLimits::default(),
            probe_len: TAIL_PROBE_LEN,
            state: State::Probe {
                len,
                buf: Vec::new(),
                complete: false,
            },
        }
    }

    /// Replaces the decode limits.
    pub fn with_limits(mut self, limits: DecodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the 64 KiB probe length (tests use small probes).
    pub fn with_probe_len(mut self, probe_len: u64) -> Self {
        self.probe_len = probe_len.max(TRAILER_LEN);
        self
    }

    /// Feeds bytes of the outstanding [`ReadRequest::Range`], in order; they may
    /// arrive in any number of pieces.
    pub fn push(&mut self, data: &[u8]) -> Result<()> {
        let (buf, wanted) = match &mut self.state {
            State::Probe {
                len: Some(len),
                buf,
                ..
            } => {
                let want = (*len).min(self.probe_len);
                (buf, want)
            }
            State::Rest {
                len: Some(_),
                buf,
                want,
                ..
            } => (buf, *want),
            State::Probe { len: None, .. } | State::Rest { len: None, .. } => {
                return Err(FormatError::Misuse {
                    what: "a suffix request is answered with push_suffix",
                });
            }
            State::Finished => {
                return Err(FormatError::Misuse {
                    what: "no read is outstanding",
                });
            }
        };
        let total = (buf.len() as u64).saturating_add(data.len() as u64);
        if total > wanted {
            return Err(FormatError::Misuse {
                what: "more bytes pushed than the request asked for",
            });
        }
        buf.extend_from_slice(data);
        Ok(())
    }

    /// Answers an outstanding [`ReadRequest::Suffix`] with the whole response; a
    /// response shorter than asked means the object is that short.
    pub fn push_suffix(&mut self, data: &[u8]) -> Result<()> {
        let (buf, complete, asked) = match &mut self.state {
            State::Probe {
                len: None,
                buf,
                complete,
            } => (buf, complete, self.probe_len),
            State::Rest {
                len: None,
                buf,
                complete,
                want,
                ..
            } => (buf, complete, *want),
            State::Finished => {
                return Err(FormatError::Misuse {
                    what: "no read is outstanding",
                });
            }
            _ => {
                return Err(FormatError::Misuse {
                    what: "a range request is answered with push",
                });
            }
        };
        if *complete || data.len() as u64 > asked {
            return Err(FormatError::Misuse {
                what: "suffix response longer than asked, or answered twice",
            });
        }
        buf.extend_from_slice(data);
        *complete = true;
        Ok(())
    }

    /// Says what is needed next, or decodes the footer once everything is in hand.
    pub fn try_decode(&mut self) -> Result<DecodeResult> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Finished => Err(FormatError::Misuse {
                what: "the decoder has already answered",
            }),
            State::Probe { len, buf, complete } => self.after_probe(len, buf, complete),
            State::Rest {
                len,
                probe,
                want,
                buf,
                complete,
            } => self.after_rest(len, probe, want, buf, complete),
        }
    }

    fn after_probe(
        &mut self,
        len: Option<u64>,
        probe: Vec<u8>,
        complete: bool,
    ) -> Result<DecodeResult> {
        let have = probe.len() as u64;
        let request = match len {
            Some(len) => {
                let want = len.min(self.probe_len);
                (have < want)
                    .then(|| ReadRequest::Range(len.saturating_sub(want).saturating_add(have)..len))
            }
            None => (!complete).then_some(ReadRequest::Suffix {
                len: self.probe_len,
            }),
        };
        if let Some(request) = request {
            self.state = State::Probe {
                len,
                buf: probe,
                complete,
            };
            return Ok(DecodeResult::NeedsData(request));
        }
        // A suffix response shorter than the probe is the whole object.
        let len = len.or_else(|| (have < self.probe_len).then_some(have));
        let trailer = Trailer::parse_tail(&probe)?;
        let footer_size = trailer.footer_size;
        if footer_size > self.limits.max_footer_bytes {
            return Err(FormatError::corrupt(format!(
                "footer size {footer_size} exceeds the limit of {} bytes",
                self.limits.max_footer_bytes
            )));
        }
        let need = footer_size.saturating_add(TRAILER_LEN);
        if let Some(len) = len.filter(|&len| need.saturating_add(HEADER_LEN) > len) {
            return Err(FormatError::corrupt(format!(
                "footer size {footer_size} does not fit in a container of {len} bytes"
            )));
        }
        if need <= have {
            return self.decode(len, probe, footer_size);
        }
        let (want, request) = match len {
            Some(len) => {
                let want = need.saturating_sub(have);
                let start = len.saturating_sub(need);
                (want, ReadRequest::Range(start..start.saturating_add(want)))
            }
            None => (need, ReadRequest::Suffix { len: need }),
        };
        self.state = State::Rest {
            len,
            probe,
            want,
            buf: Vec::new(),
            complete: false,
        };
        Ok(DecodeResult::NeedsData(request))
    }

    fn after_rest(
        &mut self,
        len: Option<u64>,
        probe: Vec<u8>,
        want: u64,
        mut buf: Vec<u8>,
        complete: bool,
    ) -> Result<DecodeResult> {
        let have = buf.len() as u64;
        let request = match len {
            Some(len) => {
                let end = len.saturating_sub(probe.len() as u64);
                (have < want)
                    .then(|| ReadRequest::Range(end.saturating_sub(want).saturating_add(have)..end))
            }
            None => (!complete).then_some(ReadRequest::Suffix { len: want }),
        };
        if let Some(request) = request {
            self.state = State::Rest {
                len,
                probe,
                want,
                buf,
                complete,
            };
            return Ok(DecodeResult::NeedsData(request));
        }
        let footer_size = Trailer::parse_tail(&probe)?.footer_size;
        let tail = match len {
            Some(_) => {
                buf.extend_from_slice(&probe);
                buf
            }
            None => {
                if have < want {
                    return Err(FormatError::corrupt(format!(
                        "footer size {footer_size} does not fit in a container of {have} bytes"
                    )));
                }
                // The suffix holds the whole footer; it must end with the same trailer.
                if !buf.ends_with(
                    probe
                        .get(probe.len().saturating_sub(TRAILER_LEN as usize)..)
                        .unwrap_or_default(),
                ) {
                    return Err(FormatError::corrupt(
                        "the container changed between two reads",
                    ));
                }
                buf
            }
        };
        self.decode(len, tail, footer_size)
    }

    /// Decodes the footer at the end of `tail` and checks it against the container's length.
    fn decode(
        &mut self,
        len: Option<u64>,
        tail: Vec<u8>,
        footer_size: u64,
    ) -> Result<DecodeResult> {
        let tail_len = tail.len() as u64;
        let footer_end = tail_len.saturating_sub(TRAILER_LEN);
        let footer_start = footer_end.saturating_sub(footer_size);
        let footer_bytes = usize::try_from(footer_start)
            .ok()
            .zip(usize::try_from(footer_end).ok())
            .and_then(|(s, e)| tail.get(s..e))
            .ok_or_else(|| not_atlas(&tail))?;
        let footer = CollectionFooter::decode(footer_bytes, &self.limits)?;
        let segments_end = footer.segments_end()?;
        let derived_len = segments_end
            .checked_add(footer_size)
            .and_then(|n| n.checked_add(TRAILER_LEN))
            .ok_or_else(|| FormatError::corrupt("container length overflows u64"))?;
        let container_len = match len {
            Some(len) if len != derived_len => {
                return Err(FormatError::corrupt(format!(
                    "segments end at byte {segments_end}, but the footer starts at byte {}",
                    len.saturating_sub(TRAILER_LEN).saturating_sub(footer_size)
                )));
            }
            Some(len) => len,
            // A suffix answered in full proves the object is at least that long,
            // so a footer describing a shorter container sits behind other bytes:
            // every segment offset would point into them. Known-length opens
            // refuse this case above.
            None if derived_len < tail_len => {
                return Err(FormatError::corrupt(format!(
                    "the footer describes a container of {derived_len} bytes, \
                     but the object holds at least {tail_len}"
                )));
            }
            None => derived_len,
        };
        // The leading magic is checked only when this read already covered it.
        let header_checked = tail_len >= container_len;
        if header_checked {
            let start = usize::try_from(tail_len.saturating_sub(container_len)).unwrap_or(0);
            check_header(tail.get(start..).unwrap_or_default())?;
        }
        Ok(DecodeResult::Opened(OpenedContainer {
            footer,
            container_len,
            footer_len: footer_size,
            header_checked,
        }))
    }
}

/// Opens a container held whole in memory (tests, tools, fuzzing).
pub fn open_bytes(bytes: &[u8], limits: DecodeLimits) -> Result<OpenedContainer> {
    let len = bytes.len() as u64;
    let mut decoder = OpenDecoder::new(Some(len)).with_limits(limits);
    loop {
        match decoder.try_decode()? {
            DecodeResult::Opened(container) => return Ok(container),
            DecodeResult::NeedsData(ReadRequest::Range(range)) => {
                let slice = usize::try_from(range.start)
                    .ok()
                    .zip(usize::try_from(range.end).ok())
                    .and_then(|(s, e)| bytes.get(s..e))
                    .ok_or(FormatError::Misuse {
                        what: "range outside the buffer",
                    })?;
                decoder.push(slice)?;
            }
            DecodeResult::NeedsData(ReadRequest::Suffix { .. }) => {
                return Err(FormatError::Misuse {
                    what: "suffix request with a known length",
                });
            }
        }
    }
}

/// The container's bytes for `footer`: header, `segments` in order, footer, trailer.
/// Writers stream; this is for tests and tools that build small containers in memory.
pub fn assemble(footer: &CollectionFooter, segments: &[&[u8]]) -> Result<Vec<u8>> {
    let footer_bytes = footer.encode()?;
    let mut out = crate::frame::encode_header().to_vec();
    for segment in segments {
        out.extend_from_slice(segment);
    }
    footer.validate_layout(out.len() as u64)?;
    out.extend_from_slice(&footer_bytes);
    out.extend_from_slice(
        &Trailer {
            footer_size: footer_bytes.len() as u64,
        }
        .encode(),
    );
    Ok(out)
}

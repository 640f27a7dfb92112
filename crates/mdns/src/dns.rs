//! A DNS message codec (RFC 1035 section 4) with what mDNS adds (RFC 6762 section 18): the
//! unicast-response bit in questions and the cache-flush bit in records. Decoding is bounded by
//! the bytes present: counts never size an allocation, names are at most 255 bytes, compression
//! pointers only point backwards.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Record types used here (RFC 1035, RFC 3596, RFC 2782).
pub const TYPE_A: u16 = 1;
/// Domain name pointer.
pub const TYPE_PTR: u16 = 12;
/// Text strings.
pub const TYPE_TXT: u16 = 16;
/// IPv6 address.
pub const TYPE_AAAA: u16 = 28;
/// Service location.
pub const TYPE_SRV: u16 = 33;
/// The query type matching every type.
pub const TYPE_ANY: u16 = 255;
/// The Internet class.
pub const CLASS_IN: u16 = 1;
/// The query class matching every class.
pub const CLASS_ANY: u16 = 255;
/// Top bit of a question's class: a unicast response is wanted (RFC 6762 section 5.4).
pub const UNICAST_RESPONSE: u16 = 0x8000;
/// Top bit of a record's class: the record replaces cached ones (RFC 6762 section 10.2).
pub const CACHE_FLUSH: u16 = 0x8000;
/// QR set: the message is a response.
pub const FLAG_RESPONSE: u16 = 0x8000;
/// AA set: mDNS responses are authoritative (RFC 6762 section 18.4).
pub const FLAG_AUTHORITATIVE: u16 = 0x0400;

/// The longest name on the wire, in bytes (RFC 1035 section 3.1).
const MAX_NAME_BYTES: usize = 255;
/// The longest label.
const MAX_LABEL_BYTES: usize = 63;
/// A question is at least a root name and type and class.
const MIN_QUESTION_BYTES: usize = 5;
/// A record is at least a root name, type, class, TTL and RDLENGTH.
const MIN_RECORD_BYTES: usize = 11;

/// Why a message could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The message ends inside a field.
    Truncated,
    /// A name is longer than 255 bytes or a label longer than 63.
    NameTooLong,
    /// A compression pointer does not point before itself, or a label type is reserved.
    BadPointer,
    /// RDATA does not match its length or type.
    BadRecordData,
    /// A section count promises more entries than the bytes can hold.
    BadCount,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Truncated => "truncated message",
            Self::NameTooLong => "name or label too long",
            Self::BadPointer => "bad compression pointer or label type",
            Self::BadRecordData => "record data does not match its type or length",
            Self::BadCount => "section count larger than the message",
        })
    }
}

impl std::error::Error for DecodeError {}

/// A domain name as labels; compared without regard to ASCII case (RFC 6762 section 16).
#[derive(Debug, Clone, Default)]
pub struct Name {
    labels: Vec<Vec<u8>>,
}

impl Name {
    /// A name from its labels, for example `["My Server", "_smb", "_tcp", "local"]`; labels may
    /// hold dots and spaces (RFC 6763 section 4.3). Over-long labels are cut at 63 bytes on a
    /// character boundary.
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            labels: labels
                .into_iter()
                .map(|l| {
                    let mut end = l.len().min(MAX_LABEL_BYTES);
                    while !l.is_char_boundary(end) {
                        end -= 1;
                    }
                    l.as_bytes().get(..end).unwrap_or_default().to_vec()
                })
                .collect(),
        }
    }

    /// The labels.
    pub fn labels(&self) -> &[Vec<u8>] {
        &self.labels
    }

    /// The name in lower case, as the canonical form for comparisons (RFC 4034 section 6.2).
    fn lowercase_labels(&self) -> Vec<Vec<u8>> {
        self.labels.iter().map(|l| l.to_ascii_lowercase()).collect()
    }

    /// The uncompressed wire form in lower case, for the ordering of RFC 6762 section 8.2.
    fn canonical_bytes(&self, out: &mut Vec<u8>) {
        for label in self.lowercase_labels() {
            // Labels are at most 63 bytes, so the length fits.
            out.push(u8::try_from(label.len()).unwrap_or(u8::MAX));
            out.extend_from_slice(&label);
        }
        out.push(0);
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.labels.len() == other.labels.len()
            && self
                .labels
                .iter()
                .zip(&other.labels)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    }
}

impl Eq for Name {}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for label in &self.labels {
            write!(f, "{}.", String::from_utf8_lossy(label))?;
        }
        Ok(())
    }
}

/// One question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub name: Name,
    pub qtype: u16,
    /// The class without the unicast-response bit.
    pub class: u16,
    /// The QU bit.
    pub unicast_response: bool,
}

/// The data of a record, decoded for the types a responder uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Ptr(Name),
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: Name,
    },
    /// Character strings, each at most 255 bytes.
    Txt(Vec<Vec<u8>>),
    /// Any other type, as received.
    Other(Vec<u8>),
}

/// One resource record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub name: Name,
    pub rtype: u16,
    /// The class without the cache-flush bit.
    pub class: u16,
    pub cache_flush: bool,
    pub ttl: u32,
    pub data: RData,
}

impl Record {
    /// The record's class, type and uncompressed RDATA, in the order that decides
    /// simultaneous probes (RFC 6762 section 8.2).
    pub fn canonical_rdata(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.class.to_be_bytes());
        out.extend_from_slice(&self.rtype.to_be_bytes());
        match &self.data {
            RData::A(ip) => out.extend_from_slice(&ip.octets()),
            RData::Aaaa(ip) => out.extend_from_slice(&ip.octets()),
            RData::Ptr(name) => name.canonical_bytes(&mut out),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                out.extend_from_slice(&priority.to_be_bytes());
                out.extend_from_slice(&weight.to_be_bytes());
                out.extend_from_slice(&port.to_be_bytes());
                target.canonical_bytes(&mut out);
            }
            RData::Txt(strings) => {
                for s in strings {
                    out.push(u8::try_from(s.len()).unwrap_or(u8::MAX));
                    out.extend_from_slice(s.get(..usize::from(u8::MAX)).unwrap_or(s));
                }
            }
            RData::Other(bytes) => out.extend_from_slice(bytes),
        }
        out
    }

    /// Same name, type, class and data: the same record, whatever its TTL.
    pub fn same_data(&self, other: &Record) -> bool {
        self.name == other.name
            && self.rtype == other.rtype
            && self.class == other.class
            && self.canonical_rdata() == other.canonical_rdata()
    }
}

/// A DNS message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    pub id: u16,
    pub flags: u16,
    pub questions: Vec<Question>,
    pub answers: Vec<Record>,
    pub authorities: Vec<Record>,
    pub additionals: Vec<Record>,
}

impl Message {
    /// Whether the QR bit says response.
    pub fn is_response(&self) -> bool {
        self.flags & FLAG_RESPONSE != 0
    }

    /// Decodes a message.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader { bytes, pos: 0 };
        let id = r.u16()?;
        let flags = r.u16()?;
        let counts = [r.u16()?, r.u16()?, r.u16()?, r.u16()?];
        let remaining = bytes.len().saturating_sub(r.pos);
        let [qd, an, ns, ar] = counts.map(usize::from);
        if qd * MIN_QUESTION_BYTES + (an + ns + ar) * MIN_RECORD_BYTES > remaining {
            return Err(DecodeError::BadCount);
        }
        let mut message = Message {
            id,
            flags,
            ..Message::default()
        };
        for _ in 0..qd {
            let name = r.name()?;
            let qtype = r.u16()?;
            let class = r.u16()?;
            message.questions.push(Question {
                name,
                qtype,
                class: class & !UNICAST_RESPONSE,
                unicast_response: class & UNICAST_RESPONSE != 0,
            });
        }
        for (count, section) in [
            (an, &mut message.answers),
            (ns, &mut message.authorities),
            (ar, &mut message.additionals),
        ] {
            for _ in 0..count {
                section.push(r.record()?);
            }
        }
        Ok(message)
    }

    /// Encodes the message, compressing names.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u16(self.id);
        w.u16(self.flags);
        for count in [
            self.questions.len(),
            self.answers.len(),
            self.authorities.len(),
            self.additionals.len(),
        ] {
            w.u16(u16::try_from(count).unwrap_or(u16::MAX));
        }
        for q in &self.questions {
            w.name(&q.name);
            w.u16(q.qtype);
            w.u16(
                q.class
                    | if q.unicast_response {
                        UNICAST_RESPONSE
                    } else {
                        0
                    },
            );
        }
        for record in self
            .answers
            .iter()
            .chain(&self.authorities)
            .chain(&self.additionals)
        {
            w.record(record);
        }
        w.out
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::Truncated)?;
        let slice = self
            .bytes
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated)?;
        self.pos = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = self.take(1)?;
        b.first().copied().ok_or(DecodeError::Truncated)
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes(
            b.try_into().map_err(|_| DecodeError::Truncated)?,
        ))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes(
            b.try_into().map_err(|_| DecodeError::Truncated)?,
        ))
    }

    /// Reads a possibly compressed name at the current position.
    fn name(&mut self) -> Result<Name, DecodeError> {
        let (name, end) = read_name(self.bytes, self.pos)?;
        self.pos = end;
        Ok(name)
    }

    fn record(&mut self) -> Result<Record, DecodeError> {
        let name = self.name()?;
        let rtype = self.u16()?;
        let class = self.u16()?;
        let ttl = self.u32()?;
        let len = usize::from(self.u16()?);
        let start = self.pos;
        let rdata = self.take(len)?;
        let end = self.pos;
        let data = match rtype {
            TYPE_A => RData::A(Ipv4Addr::from(
                <[u8; 4]>::try_from(rdata).map_err(|_| DecodeError::BadRecordData)?,
            )),
            TYPE_AAAA => RData::Aaaa(Ipv6Addr::from(
                <[u8; 16]>::try_from(rdata).map_err(|_| DecodeError::BadRecordData)?,
            )),
            TYPE_PTR => {
                let (target, name_end) = read_name(self.bytes, start)?;
                if name_end != end {
                    return Err(DecodeError::BadRecordData);
                }
                RData::Ptr(target)
            }
            TYPE_SRV => {
                let mut fixed = Reader {
                    bytes: self.bytes,
                    pos: start,
                };
                let priority = fixed.u16()?;
                let weight = fixed.u16()?;
                let port = fixed.u16()?;
                if fixed.pos > end {
                    return Err(DecodeError::BadRecordData);
                }
                let (target, name_end) = read_name(self.bytes, fixed.pos)?;
                if name_end != end {
                    return Err(DecodeError::BadRecordData);
                }
                RData::Srv {
                    priority,
                    weight,
                    port,
                    target,
                }
            }
            TYPE_TXT => {
                let mut strings = Vec::new();
                let mut txt = Reader {
                    bytes: rdata,
                    pos: 0,
                };
                while txt.pos < rdata.len() {
                    let n = usize::from(txt.u8()?);
                    strings.push(
                        txt.take(n)
                            .map_err(|_| DecodeError::BadRecordData)?
                            .to_vec(),
                    );
                }
                // One empty string is how an empty TXT record is written (RFC 6763 section 6.1).
                if strings.len() == 1 && strings.iter().all(Vec::is_empty) {
                    strings.clear();
                }
                RData::Txt(strings)
            }
            _ => RData::Other(rdata.to_vec()),
        };
        Ok(Record {
            name,
            rtype,
            class: class & !CACHE_FLUSH,
            cache_flush: class & CACHE_FLUSH != 0,
            ttl,
            data,
        })
    }
}

/// Reads a name starting at `pos` of `message`; returns it and the position after it (after
/// the first pointer if it was compressed).
fn read_name(message: &[u8], mut pos: usize) -> Result<(Name, usize), DecodeError> {
    let mut labels = Vec::new();
    let mut wire_len = 1;
    let mut end = None;
    // Each pointer must go strictly backwards, so the walk ends; this bounds it further.
    let mut lowest_jump = pos;
    loop {
        let len = *message.get(pos).ok_or(DecodeError::Truncated)?;
        match len & 0xC0 {
            0x00 => {
                if len == 0 {
                    return Ok((Name { labels }, end.unwrap_or(pos + 1)));
                }
                let n = usize::from(len);
                wire_len += n + 1;
                if wire_len > MAX_NAME_BYTES {
                    return Err(DecodeError::NameTooLong);
                }
                let label = message
                    .get(pos + 1..pos + 1 + n)
                    .ok_or(DecodeError::Truncated)?;
                labels.push(label.to_vec());
                pos += 1 + n;
            }
            0xC0 => {
                let low = *message.get(pos + 1).ok_or(DecodeError::Truncated)?;
                let target = usize::from(u16::from_be_bytes([len & 0x3F, low]));
                if target >= lowest_jump {
                    return Err(DecodeError::BadPointer);
                }
                lowest_jump = target;
                end.get_or_insert(pos + 2);
                pos = target;
            }
            _ => return Err(DecodeError::BadPointer),
        }
    }
}

#[derive(Default)]
struct Writer {
    out: Vec<u8>,
    /// Names written so far (suffixes included, lower-cased) with their offsets.
    names: Vec<(Vec<Vec<u8>>, u16)>,
}

impl Writer {
    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn name(&mut self, name: &Name) {
        let lower = name.lowercase_labels();
        for (i, label) in name.labels.iter().enumerate() {
            let suffix = lower.get(i..).unwrap_or_default();
            if let Some((_, offset)) = self.names.iter().find(|(n, _)| n == suffix) {
                self.u16(0xC000 | offset);
                return;
            }
            // Offsets beyond 14 bits cannot be pointed to.
            if let Ok(offset) = u16::try_from(self.out.len())
                && offset < 0x4000
            {
                self.names.push((suffix.to_vec(), offset));
            }
            self.out.push(u8::try_from(label.len()).unwrap_or(0));
            self.out.extend_from_slice(label);
        }
        self.out.push(0);
    }

    fn record(&mut self, r: &Record) {
        self.name(&r.name);
        self.u16(r.rtype);
        self.u16(r.class | if r.cache_flush { CACHE_FLUSH } else { 0 });
        self.u32(r.ttl);
        let len_at = self.out.len();
        self.u16(0);
        match &r.data {
            RData::A(ip) => self.out.extend_from_slice(&ip.octets()),
            RData::Aaaa(ip) => self.out.extend_from_slice(&ip.octets()),
            RData::Ptr(name) => self.name(name),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                self.u16(*priority);
                self.u16(*weight);
                self.u16(*port);
                // Unicast DNS forbids compressing the target (RFC 2782); mDNS compresses it
                // (RFC 6762 section 18.14).
                self.name(target);
            }
            RData::Txt(strings) => {
                if strings.is_empty() {
                    // An empty TXT record is one empty string (RFC 6763 section 6.1).
                    self.out.push(0);
                }
                for s in strings {
                    let s = s.get(..usize::from(u8::MAX)).unwrap_or(s);
                    self.out.push(u8::try_from(s.len()).unwrap_or(u8::MAX));
                    self.out.extend_from_slice(s);
                }
            }
            RData::Other(bytes) => self.out.extend_from_slice(bytes),
        }
        let len = u16::try_from(self.out.len() - len_at - 2).unwrap_or(u16::MAX);
        if let Some(slot) = self.out.get_mut(len_at..len_at + 2) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests;

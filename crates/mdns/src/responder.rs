//! The responder, sans IO: datagrams and the time in, datagrams out. It probes for its unique
//! names, announces, answers queries for its records and says goodbye (RFC 6762 sections 6, 8,
//! 9, 10.1; RFC 6763 sections 4, 6, 9, 12).

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::dns::{
    CLASS_ANY, CLASS_IN, FLAG_AUTHORITATIVE, FLAG_RESPONSE, Message, Name, Question, RData, Record,
    TYPE_A, TYPE_AAAA, TYPE_ANY, TYPE_PTR, TYPE_SRV, TYPE_TXT,
};

/// The mDNS port.
pub const MDNS_PORT: u16 = 5353;
/// Records naming a host: 120 s (RFC 6762 section 10).
const HOST_TTL: u32 = 120;
/// Other records: 75 minutes.
const OTHER_TTL: u32 = 4500;
/// TTL cap for answers to legacy unicast queries (RFC 6762 section 6.7).
const LEGACY_TTL: u32 = 10;
const PROBE_COUNT: u8 = 3;
const PROBE_INTERVAL: Duration = Duration::from_millis(250);
const ANNOUNCE_COUNT: u8 = 2;
const ANNOUNCE_INTERVAL: Duration = Duration::from_secs(1);
/// After losing a simultaneous probe tie-break, wait this long (RFC 6762 section 8.2).
const LOST_TIEBREAK_DELAY: Duration = Duration::from_secs(1);
/// More conflicts than this and the responder gives up renaming.
const MAX_CONFLICTS: u32 = 64;

/// What to advertise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The service instance name users see (the server name, e.g. "FILES").
    pub instance: String,
    /// The host label: `<host>.local` names the addresses.
    pub host: String,
    /// The SMB port.
    pub port: u16,
    /// The `_device-info._tcp` model (for example "Xserve"), or none.
    pub model: Option<String>,
    /// The addresses `<host>.local` resolves to.
    pub addresses: Vec<IpAddr>,
    /// The shares that are Time Machine destinations, advertised as `_adisk._tcp` disks.
    pub time_machine: Vec<String>,
}

/// Where a datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// 224.0.0.251 and ff02::fb, port 5353, on every interface.
    Multicast,
    /// One querier.
    Unicast(SocketAddr),
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub destination: Destination,
    pub payload: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Probing {
        sent: u8,
        next: Instant,
    },
    Announcing {
        sent: u8,
        next: Instant,
    },
    Running,
    /// Goodbye sent, or too many conflicts.
    Stopped,
}

/// An mDNS responder for one SMB service.
#[derive(Debug)]
pub struct Responder {
    wanted_instance: String,
    wanted_host: String,
    info: ServiceInfo,
    instance_conflicts: u32,
    host_conflicts: u32,
    phase: Phase,
    /// Responses waiting for their send time, earliest first.
    queue: VecDeque<(Instant, Transmit)>,
    rng: u64,
}

fn local(labels: &[&str]) -> Name {
    Name::from_labels(labels.iter().copied().chain(["local"]))
}

impl Responder {
    /// A responder that starts probing at `now`; `seed` drives the random delays.
    pub fn new(info: ServiceInfo, now: Instant, seed: u64) -> Self {
        let mut responder = Self {
            wanted_instance: info.instance.clone(),
            wanted_host: info.host.clone(),
            info,
            instance_conflicts: 0,
            host_conflicts: 0,
            phase: Phase::Stopped,
            queue: VecDeque::new(),
            rng: seed | 1,
        };
        // The first probe waits 0-250 ms so that hosts powered on together do not collide.
        let delay = responder.random_millis(0, 250);
        responder.phase = Phase::Probing {
            sent: 0,
            next: now + delay,
        };
        responder
    }

    /// The names in use now (they change after a conflict).
    pub fn info(&self) -> &ServiceInfo {
        &self.info
    }

    /// Whether probing has finished and the names are ours.
    pub fn is_established(&self) -> bool {
        matches!(self.phase, Phase::Announcing { .. } | Phase::Running)
    }

    fn random_millis(&mut self, low: u64, high: u64) -> Duration {
        // xorshift64*: enough to spread delays, no security role.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        Duration::from_millis(low + r % (high - low + 1))
    }

    fn host_name(&self) -> Name {
        local(&[&self.info.host])
    }

    fn smb_instance(&self) -> Name {
        local(&[&self.info.instance, "_smb", "_tcp"])
    }

    fn device_instance(&self) -> Name {
        local(&[&self.info.instance, "_device-info", "_tcp"])
    }

    fn adisk_instance(&self) -> Name {
        local(&[&self.info.instance, "_adisk", "_tcp"])
    }

    /// The `_adisk._tcp` TXT strings macOS looks for to offer a share for Time Machine: one
    /// `dkN` disk entry per share (adVF 0x82: a backup destination reached over SMB), then the
    /// system entry (waMa, the Wi-Fi MAC address, unknown: 0; adVF 0x100: SMB). A share whose
    /// entry would not fit one TXT string (255 bytes) is left out.
    fn adisk_txt(&self) -> Vec<Vec<u8>> {
        let mut strings: Vec<Vec<u8>> = self
            .info
            .time_machine
            .iter()
            .enumerate()
            .map(|(i, share)| format!("dk{i}=adVN={share},adVF=0x82").into_bytes())
            .filter(|entry| entry.len() <= 255)
            .collect();
        strings.push(b"sys=waMa=0,adVF=0x100".to_vec());
        strings
    }

    /// Every record, unique ones with the cache-flush bit.
    fn records(&self, ttl_scale: Option<u32>) -> Vec<Record> {
        let ttl = |t: u32| ttl_scale.map_or(t, |cap| t.min(cap));
        let unique = |name: Name, rtype: u16, t: u32, data: RData| Record {
            name,
            rtype,
            class: CLASS_IN,
            cache_flush: true,
            ttl: ttl(t),
            data,
        };
        // Port 0 where the instance is not a service to connect to (`_device-info`, whose SRV
        // resolvers such as python-zeroconf want although Apple publishes only the TXT, as
        // avahi and so Samba do; `_adisk`, whose disks are reached through `_smb._tcp`).
        let srv = |instance: Name, port: u16| {
            unique(
                instance,
                TYPE_SRV,
                HOST_TTL,
                RData::Srv {
                    priority: 0,
                    weight: 0,
                    port,
                    target: self.host_name(),
                },
            )
        };
        let shared = |name: Name, target: Name| Record {
            name,
            rtype: TYPE_PTR,
            class: CLASS_IN,
            cache_flush: false,
            ttl: ttl(OTHER_TTL),
            data: RData::Ptr(target),
        };
        let mut records = vec![
            shared(local(&["_smb", "_tcp"]), self.smb_instance()),
            shared(
                local(&["_services", "_dns-sd", "_udp"]),
                local(&["_smb", "_tcp"]),
            ),
            srv(self.smb_instance(), self.info.port),
            unique(
                self.smb_instance(),
                TYPE_TXT,
                OTHER_TTL,
                RData::Txt(Vec::new()),
            ),
        ];
        if let Some(model) = &self.info.model {
            records.push(shared(
                local(&["_device-info", "_tcp"]),
                self.device_instance(),
            ));
            records.push(unique(
                self.device_instance(),
                TYPE_TXT,
                OTHER_TTL,
                RData::Txt(vec![format!("model={model}").into_bytes()]),
            ));
            records.push(srv(self.device_instance(), 0));
        }
        if !self.info.time_machine.is_empty() {
            records.push(shared(local(&["_adisk", "_tcp"]), self.adisk_instance()));
            records.push(shared(
                local(&["_services", "_dns-sd", "_udp"]),
                local(&["_adisk", "_tcp"]),
            ));
            records.push(unique(
                self.adisk_instance(),
                TYPE_TXT,
                OTHER_TTL,
                RData::Txt(self.adisk_txt()),
            ));
            records.push(srv(self.adisk_instance(), 0));
        }
        for ip in &self.info.addresses {
            let (rtype, data) = match ip {
                IpAddr::V4(v4) => (TYPE_A, RData::A(*v4)),
                IpAddr::V6(v6) => (TYPE_AAAA, RData::Aaaa(*v6)),
            };
            records.push(unique(self.host_name(), rtype, HOST_TTL, data));
        }
        records
    }

    fn unique_names(&self) -> Vec<Name> {
        let mut names = vec![self.host_name(), self.smb_instance()];
        if self.info.model.is_some() {
            names.push(self.device_instance());
        }
        if !self.info.time_machine.is_empty() {
            names.push(self.adisk_instance());
        }
        names
    }

    /// Takes in one received datagram.
    pub fn handle(&mut self, packet: &[u8], from: SocketAddr, now: Instant) {
        if self.phase == Phase::Stopped {
            return;
        }
        let Ok(message) = Message::decode(packet) else {
            return;
        };
        if message.is_response() {
            self.check_conflicts(&message, now);
        } else {
            self.check_probe_tiebreak(&message, now);
            if self.is_established() {
                self.answer(&message, from, now);
            }
        }
    }

    /// RFC 6762 sections 8.1 and 9: a response holding one of our unique names with other data.
    fn check_conflicts(&mut self, message: &Message, now: Instant) {
        let ours = self.records(None);
        let probing = matches!(self.phase, Phase::Probing { .. });
        let mut conflicting = Vec::new();
        for record in message.answers.iter().chain(&message.additionals) {
            let Some(name) = self.unique_names().into_iter().find(|n| *n == record.name) else {
                continue;
            };
            let identical = ours.iter().any(|o| o.same_data(record));
            // While probing any record with the name is a conflict; later only one of a type
            // we hold, with data we do not.
            let same_type = ours
                .iter()
                .any(|o| o.name == record.name && o.rtype == record.rtype);
            if !identical && (probing || same_type) {
                conflicting.push(name);
            }
        }
        if !conflicting.is_empty() {
            let host = conflicting.contains(&self.host_name());
            self.rename(host, !host || conflicting.len() > 1, now);
        }
    }

    /// RFC 6762 section 8.2: another host probing for one of our names at the same time; the
    /// lexicographically later record set wins.
    fn check_probe_tiebreak(&mut self, message: &Message, now: Instant) {
        if !matches!(self.phase, Phase::Probing { .. }) || message.authorities.is_empty() {
            return;
        }
        let ours = self.records(None);
        for name in self.unique_names() {
            if !message.questions.iter().any(|q| q.name == name) {
                continue;
            }
            let mut theirs: Vec<Vec<u8>> = message
                .authorities
                .iter()
                .filter(|r| r.name == name)
                .map(Record::canonical_rdata)
                .collect();
            let mut mine: Vec<Vec<u8>> = ours
                .iter()
                .filter(|r| r.name == name)
                .map(Record::canonical_rdata)
                .collect();
            theirs.sort();
            mine.sort();
            if theirs.is_empty() || theirs == mine {
                continue;
            }
            if theirs > mine {
                self.phase = Phase::Probing {
                    sent: 0,
                    next: now + LOST_TIEBREAK_DELAY,
                };
                return;
            }
        }
    }

    /// Picks the next name for what conflicted and probes again.
    fn rename(&mut self, host: bool, instance: bool, now: Instant) {
        if host {
            self.host_conflicts += 1;
            self.info.host = format!("{}-{}", self.wanted_host, self.host_conflicts + 1);
        }
        if instance {
            self.instance_conflicts += 1;
            self.info.instance =
                format!("{} ({})", self.wanted_instance, self.instance_conflicts + 1);
        }
        if self.host_conflicts + self.instance_conflicts > MAX_CONFLICTS {
            self.phase = Phase::Stopped;
            return;
        }
        self.phase = Phase::Probing { sent: 0, next: now };
    }

    fn answer(&mut self, query: &Message, from: SocketAddr, now: Instant) {
        let legacy = from.port() != MDNS_PORT;
        let records = self.records(legacy.then_some(LEGACY_TTL));
        let mut answers: Vec<Record> = Vec::new();
        for q in &query.questions {
            for r in records.iter().filter(|r| matches(q, r)) {
                // Known-answer suppression (RFC 6762 section 7.1).
                let known = query
                    .answers
                    .iter()
                    .any(|k| k.same_data(r) && k.ttl >= r.ttl / 2);
                if !known && !answers.iter().any(|a| a.same_data(r)) {
                    answers.push(r.clone());
                }
            }
        }
        if answers.is_empty() {
            return;
        }
        let additionals = self.additionals(&answers, &records);
        let shared = answers.iter().any(|r| !r.cache_flush);
        let mut response = Message {
            id: 0,
            flags: FLAG_RESPONSE | FLAG_AUTHORITATIVE,
            questions: Vec::new(),
            answers,
            authorities: Vec::new(),
            additionals,
        };
        let (destination, delay) = if legacy {
            // A plain DNS client: its ID and question back, no cache-flush bits.
            response.id = query.id;
            response.questions = query.questions.clone();
            for r in response.answers.iter_mut().chain(&mut response.additionals) {
                r.cache_flush = false;
            }
            (Destination::Unicast(from), Duration::ZERO)
        } else if query.questions.iter().all(|q| q.unicast_response) {
            (Destination::Unicast(from), Duration::ZERO)
        } else if shared {
            // Shared answers wait 20-120 ms so that responders do not all answer at once.
            (Destination::Multicast, self.random_millis(20, 120))
        } else {
            (Destination::Multicast, Duration::ZERO)
        };
        self.schedule(
            now + delay,
            Transmit {
                destination,
                payload: response.encode(),
            },
        );
    }

    /// RFC 6763 section 12: with a PTR, the instance's SRV and TXT and the host's addresses;
    /// with an SRV, the addresses.
    fn additionals(&self, answers: &[Record], records: &[Record]) -> Vec<Record> {
        let mut wanted: Vec<Name> = Vec::new();
        for a in answers {
            match &a.data {
                RData::Ptr(target) => {
                    wanted.push(target.clone());
                    if *target == self.smb_instance() {
                        wanted.push(self.host_name());
                    }
                }
                RData::Srv { target, .. } => wanted.push(target.clone()),
                _ => {}
            }
        }
        records
            .iter()
            .filter(|r| wanted.contains(&r.name) && r.rtype != TYPE_PTR)
            .filter(|r| !answers.iter().any(|a| a.same_data(r)))
            .cloned()
            .collect()
    }

    fn schedule(&mut self, at: Instant, transmit: Transmit) {
        let index = self.queue.partition_point(|(t, _)| *t <= at);
        self.queue.insert(index, (at, transmit));
    }

    /// The next datagram due at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self.phase {
            Phase::Probing { sent, next } if now >= next => {
                if sent == PROBE_COUNT {
                    self.phase = Phase::Announcing { sent: 0, next: now };
                    return self.poll_transmit(now);
                }
                self.phase = Phase::Probing {
                    sent: sent + 1,
                    next: now + PROBE_INTERVAL,
                };
                return Some(Transmit {
                    destination: Destination::Multicast,
                    payload: self.probe(sent == 0).encode(),
                });
            }
            Phase::Announcing { sent, next } if now >= next => {
                let sent = sent + 1;
                self.phase = if sent == ANNOUNCE_COUNT {
                    Phase::Running
                } else {
                    Phase::Announcing {
                        sent,
                        next: now + ANNOUNCE_INTERVAL * u32::from(sent),
                    }
                };
                return Some(Transmit {
                    destination: Destination::Multicast,
                    payload: self.announcement(None).encode(),
                });
            }
            _ => {}
        }
        if self.queue.front().is_some_and(|(at, _)| *at <= now) {
            return self.queue.pop_front().map(|(_, t)| t);
        }
        None
    }

    /// When [`Responder::poll_transmit`] next has something, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let phase = match self.phase {
            Phase::Probing { next, .. } | Phase::Announcing { next, .. } => Some(next),
            Phase::Running | Phase::Stopped => None,
        };
        let queued = self.queue.front().map(|(at, _)| *at);
        match (phase, queued) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The goodbye (every record with TTL 0) once the records were announced; the responder
    /// stops. None if nothing was announced.
    pub fn goodbye(&mut self) -> Option<Transmit> {
        let announced = self.is_established();
        self.phase = Phase::Stopped;
        self.queue.clear();
        announced.then(|| Transmit {
            destination: Destination::Multicast,
            payload: self.announcement(Some(0)).encode(),
        })
    }

    /// A probe: an ANY question per unique name, our proposed records in the authority section
    /// (RFC 6762 section 8.1). The first asks for unicast answers.
    fn probe(&self, first: bool) -> Message {
        Message {
            questions: self
                .unique_names()
                .into_iter()
                .map(|name| Question {
                    name,
                    qtype: TYPE_ANY,
                    class: CLASS_IN,
                    unicast_response: first,
                })
                .collect(),
            authorities: self
                .records(None)
                .into_iter()
                .filter(|r| r.cache_flush)
                .map(|r| Record {
                    cache_flush: false,
                    ..r
                })
                .collect(),
            ..Message::default()
        }
    }

    /// An unsolicited response with every record (RFC 6762 section 8.3).
    fn announcement(&self, ttl: Option<u32>) -> Message {
        let answers = self
            .records(None)
            .into_iter()
            .map(|r| Record {
                ttl: ttl.unwrap_or(r.ttl),
                ..r
            })
            .collect();
        Message {
            flags: FLAG_RESPONSE | FLAG_AUTHORITATIVE,
            answers,
            ..Message::default()
        }
    }
}

fn matches(q: &Question, r: &Record) -> bool {
    q.name == r.name
        && (q.qtype == TYPE_ANY || q.qtype == r.rtype)
        && (q.class == CLASS_IN || q.class == CLASS_ANY)
}

#[cfg(test)]
mod tests;

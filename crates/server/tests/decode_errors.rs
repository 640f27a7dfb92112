//! A request its decoder refuses is answered STATUS_INVALID_PARAMETER, and the field the
//! decoder stopped at is not lost: every handler maps a decode error through one function
//! (`request::malformed`) that logs the field at debug level (issue 17 item 6).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_testkit::client::Client;
use smb3d_testkit::harness::{self, TestServer};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Every event's fields, as `name=value`, one string per event.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl Subscriber for Events {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The events of the whole test binary: the server may log from threads of its own.
fn events() -> &'static Events {
    static EVENTS: OnceLock<Events> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let events = Events::default();
        tracing::subscriber::set_global_default(events.clone()).unwrap();
        events
    })
}

#[test]
fn a_malformed_request_is_refused_and_its_field_logged() {
    let events = events();
    let server = TestServer::new(harness::settings(), Arc::new(NullProvider)).unwrap();
    let mut client = Client::new(server.connect());
    assert_eq!(client.connect(), Some(NtStatus::SUCCESS));
    // An ECHO whose StructureSize is 5 instead of 4.
    let reply = client.call(Command::ECHO, &[5, 0, 0, 0], None);
    assert_eq!(reply.status(), Some(NtStatus::INVALID_PARAMETER));
    let logged = events.0.lock().unwrap();
    assert!(
        logged
            .iter()
            .any(|e| e.contains("field=\"StructureSize\"") && e.contains("size 5, expected 4")),
        "no event names the field: {logged:#?}"
    );
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// No handler maps the result of a decoder to a status without the field: each statement
/// that calls a `decode` function and then `map_err(|_| ...)` is listed.
#[test]
fn no_handler_drops_the_field_of_a_decode_error() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/handlers"),
        &mut files,
    );
    let mut dropped = Vec::new();
    for file in files {
        let source = fs::read_to_string(&file).unwrap();
        for (at, _) in source.match_indices(".map_err(|_| NtStatus::INVALID_PARAMETER)") {
            let mut start = source[..at].rfind([';', '{', '}']).map_or(0, |s| s + 1);
            // A block or `match` before the call: the statement began before it.
            if source[start..at].trim().is_empty() {
                start = source[..start].rfind(';').map_or(0, |s| s + 1);
            }
            if source[start..at].contains("decode") {
                let line = source[..at].lines().count();
                dropped.push(format!("{}:{line}", file.display()));
            }
        }
    }
    assert!(dropped.is_empty(), "decode errors dropped at {dropped:#?}");
}

//! Deterministic mutation of captured tokens (a stable stand-in for the fuzz targets, which
//! need nightly): the acceptor never panics, and a token whose NTLM message was altered never
//! authenticates.

use std::sync::Arc;

use smb3d_auth::ntlm::{AuthenticateMessage, ChallengeMessage, NegotiateMessage};
use smb3d_auth::spnego::{NegTokenInit2, NegotiationToken};
use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, RandomSource, ServerIdentity, Step,
};
use smb3d_wire::FileTime;

// The captured Samba exchange of tests/samba_capture.rs.
const CLIENT_NEGOTIATE: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d53535000010000001582086200000000280000000000000028000000060100000000000f";
const CLIENT_AUTHENTICATE: &str = "a182018830820184a282016c048201684e544c4d53535000030000001800180058000000c800c8007000000012001200380100000a000a004a0100000400040054010000100010005801000015820862060100000000000f278b8ad98d7150699e049f78dce370720000000000000000000000000000000000000000000000007239e0b3550b90d0913daf1032f94b190101000000000000608eb3c4217add01f312fb7b6b1d7772000000000200040056004d000100040056004d00040000000300040076006d0007000800608eb3c4217add0106000400020000000800300030000000000000000000000000000000609db1b975a2115290427e7a1785957f64a2a6f0177f21c06b540b1bf2d03afa0a0010000000000000000000000000000000000009001c0063006900660073002f003100320037002e0030002e0030002e0031000000000057004f0052004b00470052004f0055005000620065006e006300680056004d00d048173902fc163afc84779195686daaa3120410010000007100c17684b83e4300000000";
const TIME: FileTime = FileTime(0x01dd_7a21_c4b3_8e60);

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct Fixed;

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.copy_from_slice(&[0x16, 0x54, 0x94, 0x68, 0x81, 0x3f, 0x43, 0x36][..buf.len()]);
        Ok(())
    }
}

struct Bench;

impl CredentialStore for Bench {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "bench", *smb3d_auth::ntlm::crypto::nt_hash("pass"))
    }
}

fn acceptor() -> Acceptor {
    let identity = ServerIdentity {
        netbios_domain: "VM".into(),
        netbios_name: "VM".into(),
        dns_domain: String::new(),
        dns_name: "vm".into(),
    };
    Acceptor::with_random(Arc::new(identity), Arc::new(Bench), Arc::new(Fixed))
}

/// xorshift64*, so the run is the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One to four random edits: flip, set to an interesting value, truncate, or insert.
fn mutate(rng: &mut Rng, input: &[u8], region: std::ops::Range<usize>) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let end = region.end.min(out.len());
        if end <= region.start {
            break;
        }
        let at = region.start + rng.below(end - region.start);
        match rng.below(4) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => out[at] = [0x00, 0x7f, 0x80, 0xff][rng.below(4)],
            2 => out.truncate(at),
            _ => out.insert(at, rng.next() as u8),
        }
    }
    out
}

#[test]
fn mutated_tokens_never_panic_and_altered_ntlm_never_authenticates() {
    let negotiate = hex(CLIENT_NEGOTIATE);
    let authenticate = hex(CLIENT_AUTHENTICATE);
    let ntlm_start = authenticate
        .windows(8)
        .position(|w| w == b"NTLMSSP\0")
        .unwrap();
    let ntlm_end = authenticate.len() - 0x14;
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for _ in 0..20_000 {
        let first = mutate(&mut rng, &negotiate, 0..negotiate.len());
        let _ = NegotiationToken::decode(&first);
        let _ = NegTokenInit2::decode(&first);
        let _ = NegotiateMessage::decode(&first);
        let _ = acceptor().step(&first, TIME);

        let last = mutate(&mut rng, &authenticate, ntlm_start..ntlm_end);
        let _ = AuthenticateMessage::decode(&last);
        let _ = ChallengeMessage::decode(&last);
        let mut acc = acceptor();
        acc.step(&negotiate, TIME).unwrap();
        if last != authenticate {
            assert!(
                !matches!(acc.step(&last, TIME), Ok(Step::Done { .. })),
                "{last:02x?}"
            );
        }
    }
}

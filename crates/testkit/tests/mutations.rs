//! A few thousand deterministic mutations of the seed scripts (bit flips, cut and repeated
//! bytes), run through the interpreter: a cheap stand-in for the `server` fuzz target that
//! runs with every `cargo test`. No invariant may break.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_testkit::{harness, script, seeds};

/// xorshift64*: reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, mut data: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(4) {
        if data.is_empty() {
            break;
        }
        let at = rng.below(data.len());
        match rng.below(4) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = rng.next() as u8,
            2 => data.truncate(at),
            _ => {
                let len = rng.below(16).min(data.len() - at);
                let copy = data[at..at + len].to_vec();
                data.splice(at..at, copy);
            }
        }
    }
    data
}

#[test]
fn mutated_seeds_break_no_invariant() {
    let seeds: Vec<Vec<u8>> = seeds::all()
        .iter()
        .map(|(_, ops)| script::encode(ops))
        .collect();
    let mut rng = Rng(0x005e_ed0f_5b3d);
    for round in 0..1500 {
        let seed = &seeds[round % seeds.len()];
        let input = mutate(&mut rng, seed.clone());
        let ops = script::decode(&input);
        if let Err(v) = script::run(&ops, harness::settings(), Arc::new(NullProvider)) {
            panic!("round {round}: {v}\ninput: {input:02x?}");
        }
    }
}

//! Writes the seed scripts of the `server` fuzz target, one file per seed named after it:
//! `cargo run -p smb3d-testkit --example server_seeds -- fuzz/corpus/server`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus/server".into()),
    );
    std::fs::create_dir_all(&dir)?;
    for (name, ops) in smb3d_testkit::seeds::all() {
        std::fs::write(dir.join(name), smb3d_testkit::script::encode(&ops))?;
    }
    Ok(())
}

//! `smb3d manpages DIR` and `smb3d completions SHELL`: the manual pages and shell completions,
//! generated from the command line's own definition so that they cannot drift from it (the
//! Debian package is built with them, scripts/build-deb).

use std::path::{Path, PathBuf};

use clap::Command;
use clap_complete::Shell;

use crate::AnyError;

/// The section of the pages: a daemon and its administration commands.
const SECTION: &str = "8";

/// Writes `smb3d.8` and one page per subcommand (`smb3d-user-add.8`, ...) into `dir`; returns
/// the files written.
pub fn manpages(cli: Command, dir: &Path) -> Result<Vec<PathBuf>, AnyError> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Building names every subcommand as its page is named (smb3d-user-add) and as it is
    // typed (smb3d user add); the help subcommand would be a page of its own.
    let mut cli = without_help_subcommand(cli);
    cli.build();
    let mut written = Vec::new();
    write_pages(&cli, dir, &mut written)?;
    Ok(written)
}

fn without_help_subcommand(command: Command) -> Command {
    command
        .disable_help_subcommand(true)
        .mut_subcommands(without_help_subcommand)
}

fn write_pages(command: &Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<(), AnyError> {
    let page = clap_mangen::Man::new(command.clone()).section(SECTION);
    let path = dir.join(page.get_filename());
    let mut text = Vec::new();
    page.render(&mut text)?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    written.push(path);
    for sub in command.get_subcommands() {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// Prints the completion script for `shell`.
pub fn completions(cli: &mut Command, shell: Shell) {
    clap_complete::generate(shell, cli, "smb3d", &mut std::io::stdout());
}

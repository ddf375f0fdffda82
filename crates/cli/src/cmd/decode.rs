//! `rpcrdma decode`: decode one RPC-over-RDMA message or RFC 8797 private data.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use bytes::Bytes;
use rpcrdma_cli::report;
use rpcrdma_wire::{DecodeConfig, ErrorCredits, OptionType, VersionRange};

/// Decode one RPC-over-RDMA message: the transport header plus any payload,
/// exactly as it sits in a receive buffer.
///
/// Input (one of): `--hex HEX`, a FILE of raw bytes, or raw bytes on
/// standard input (no FILE, or FILE `-`). `--hex -` reads hex text from
/// standard input instead. Hex may contain spaces, newlines and colons, and
/// may start with `0x`.
///
/// Output: a readable description by default; with `--json` one JSON
/// object. Exit status 0 for a valid message, 1 for an invalid one (the
/// output then says whether the receiver replies with RDMA_ERROR, and with
/// which bytes, or discards it), 2 for usage errors. In the JSON, `err`
/// names an error code in Version One terms (`ERR_BADHEADER`) whatever the
/// version; `err_name` names it as the message's version does
/// (`RDMA2_ERR_BAD_HEADER` in Version Two), and for an invalid message
/// `reply_proc` is the error reply's procedure (`RDMA_ERROR`,
/// `RDMA2_ERROR`, or null when it is discarded).
///
/// `--private-data HEX` decodes RFC 8797 CM private data instead (found at
/// any offset, e.g. behind the MPA revision 2 IRD/ORD words); exit 0 when an
/// RFC 8797 message is found, 1 when a receiver would fall back to the
/// defaults.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  rpcrdma decode --hex '0000002a 00000001 00000020 00000000 00000000 00000000 00000000 0000002a 00000000'\n  rpcrdma decode --json capture-message.bin\n  xxd -p msg.bin | rpcrdma decode --hex - --json\n  rpcrdma decode --private-data 00800000f6ab0e1801010303"
)]
pub(crate) struct DecodeArgs {
    /// The message as hex (`-` reads hex text from standard input).
    #[arg(long, value_name = "HEX", conflicts_with_all = ["file", "private_data"])]
    hex: Option<String>,

    /// A file holding the raw message bytes (`-` or nothing: standard input).
    #[arg(value_name = "FILE", conflicts_with = "private_data")]
    file: Option<PathBuf>,

    /// Decode RFC 8797 CM private data given as hex (`-`: hex on stdin).
    #[arg(long, value_name = "HEX")]
    private_data: Option<String>,

    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,

    /// Versions this receiver supports, `LOW-HIGH` or one number: `1-2`
    /// (default) or `1` for a Version One-only receiver. ERR_VERS replies
    /// advertise this range.
    #[arg(long, value_name = "RANGE", default_value = "1-2", value_parser = parse_versions)]
    versions: VersionRange,

    /// rdma_credit of error replies. Default: echo the message's credit
    /// value (at least 1).
    #[arg(long, value_name = "N")]
    credits: Option<u32>,

    /// Treat this RDMA2_OPTIONAL rdma_opttype as supported (repeatable).
    /// By default none is, so RDMA2_OPTIONAL is answered with
    /// RDMA2_ERR_INVAL_OPTION.
    #[arg(long, value_name = "TYPE")]
    accept_option: Vec<u32>,
}

fn parse_versions(s: &str) -> Result<VersionRange, String> {
    let (lo, hi) = match s.split_once(['-', '.']) {
        Some((a, b)) => (a, b.trim_start_matches('.')),
        None => (s, s),
    };
    let num = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{s}` is not a version range; write 1-2, 1 or 2"))
    };
    VersionRange::new(num(lo)?, num(hi)?).map_err(|e| e.to_string())
}

/// Parses hex text, tolerating whitespace, colons and a `0x` prefix.
pub(crate) fn parse_hex(text: &str) -> anyhow::Result<Vec<u8>> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let mut digits = String::with_capacity(t.len());
    for (i, c) in t.chars().enumerate() {
        if c.is_ascii_hexdigit() {
            digits.push(c);
        } else if !(c.is_whitespace() || c == ':') {
            bail!("invalid hex character {c:?} at position {i}: use the digits 0-9 and a-f (spaces and colons between bytes are allowed)");
        }
    }
    if digits.is_empty() {
        bail!("the hex input is empty: give the message bytes, e.g. --hex '0000002a 00000001 ...'");
    }
    if digits.len() % 2 != 0 {
        bail!(
            "the hex input has an odd number of digits ({}): every byte needs two, so a digit is missing or extra",
            digits.len()
        );
    }
    hex::decode(&digits).context("hex input")
}

fn read_stdin() -> anyhow::Result<Vec<u8>> {
    let mut v = Vec::new();
    std::io::stdin()
        .read_to_end(&mut v)
        .context("reading standard input")?;
    Ok(v)
}

fn hex_arg(arg: &str) -> anyhow::Result<Vec<u8>> {
    if arg == "-" {
        let raw = read_stdin()?;
        let text = String::from_utf8(raw)
            .map_err(|_| anyhow::anyhow!("`--hex -` expects hex text on standard input, and it is not text; pass raw bytes without --hex"))?;
        parse_hex(&text)
    } else {
        parse_hex(arg)
    }
}

/// Runs `rpcrdma decode`.
pub(crate) fn run(args: DecodeArgs) -> anyhow::Result<ExitCode> {
    if let Some(pd) = &args.private_data {
        let buf = hex_arg(pd).context("--private-data")?;
        let (ok, text) = if args.json {
            let (ok, j) = report::private_data_json(&buf);
            (ok, j + "\n")
        } else {
            report::private_data_text(&buf)
        };
        print!("{text}");
        return Ok(ExitCode::from(if ok { 0 } else { 1 }));
    }
    let bytes = match (&args.hex, &args.file) {
        (Some(h), _) => hex_arg(h).context("--hex")?,
        (None, Some(path)) if path.as_os_str() != "-" => {
            std::fs::read(path).with_context(|| {
                format!(
                    "cannot read {}; give a readable file of raw message bytes",
                    path.display()
                )
            })?
        }
        (None, _) => read_stdin()?,
    };
    let mut cfg = DecodeConfig {
        versions: args.versions,
        ..DecodeConfig::default()
    };
    if let Some(n) = args.credits {
        cfg.error_credits = ErrorCredits::Grant(n);
    }
    for t in args.accept_option {
        cfg.options.insert(OptionType(t));
    }
    let result = rpcrdma_wire::decode(&Bytes::from(bytes), &cfg);
    if args.json {
        println!("{}", report::message_json(&result));
    } else {
        print!("{}", report::message_text(&result));
    }
    Ok(ExitCode::from(if result.is_ok() { 0 } else { 1 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_tolerates_spaces_colons_and_prefix() {
        assert_eq!(parse_hex("0x00 0a:0B\n\tff").unwrap(), vec![0, 10, 11, 255]);
    }

    #[test]
    fn hex_errors_say_what_to_fix() {
        let e = parse_hex("abc").unwrap_err().to_string();
        assert!(e.contains("odd number"), "{e}");
        let e = parse_hex("zz").unwrap_err().to_string();
        assert!(e.contains("invalid hex character 'z'"), "{e}");
        assert!(parse_hex("  ").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn version_ranges_parse() {
        assert_eq!(parse_versions("1-2"), Ok(VersionRange::V1_AND_V2));
        assert_eq!(parse_versions("1"), Ok(VersionRange::V1_ONLY));
        assert_eq!(parse_versions("1..2"), Ok(VersionRange::V1_AND_V2));
        assert!(parse_versions("1-3").is_err());
        assert!(parse_versions("x").is_err());
    }
}

//! `cargo run -p trainscope-tests --bin kineto_gen -- DIR [--world N]
//! [--layers N | --bytes N] [--seed N] [--slow-rank R:PCT]`: writes the
//! rank files (about `--bytes` each when given) of
//! one generated PyTorch profiler job ([`trainscope_tests::kineto_gen`]) as
//! `DIR/rank<R>.pt.trace.json`, for tests that need them on disk (the
//! end-to-end test that drops 8 ranks on the page). Prints the file paths.

use std::path::PathBuf;
use std::process::ExitCode;
use trainscope_tests::kineto_gen::KinetoJob;

fn parse_args(args: &[String]) -> Result<(PathBuf, KinetoJob), String> {
    let mut job = KinetoJob::default();
    let mut dir = None;
    let mut bytes = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |name: &str, v: String| {
            v.parse::<u32>()
                .map_err(|_| format!("{name}: `{v}` is not a whole number"))
        };
        match a.as_str() {
            "--world" => job.world = number(a, value(a)?)?,
            "--layers" => job.layers = number(a, value(a)?)?,
            "--seed" => job.seed = u64::from(number(a, value(a)?)?),
            "--bytes" => bytes = Some(number(a, value(a)?)?),
            "--slow-rank" => {
                let v = value(a)?;
                let (r, p) = v
                    .split_once(':')
                    .ok_or_else(|| format!("--slow-rank: `{v}` is not R:PCT"))?;
                job.slow_rank = Some((number(a, r.to_string())?, number(a, p.to_string())?));
            }
            _ if a.starts_with("--") => return Err(format!("unknown option `{a}`")),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let dir = dir.ok_or(
        "usage: kineto_gen DIR [--world N] [--layers N | --bytes N] [--seed N] [--slow-rank R:PCT]",
    )?;
    if job.world == 0 {
        return Err("--world must be at least 1".to_string());
    }
    if let Some(b) = bytes {
        let sized = KinetoJob::sized(job.seed, job.world, b as usize);
        job.layers = sized.layers;
        job.bucket_layers = sized.bucket_layers;
    }
    Ok((dir, job))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, job) = match parse_args(&args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    for (name, text) in job.generate() {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        println!("{}", path.display());
    }
    ExitCode::SUCCESS
}

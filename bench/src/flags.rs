//! The subcommands' `--name value` flags, read one way.

/// The value after `--name`, parsed; `None` when absent or unparsable.
pub fn value<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1)?.parse().ok()
}

/// `--sizes 100,1000`: the sizes given, if any.
pub fn sizes(args: &[String]) -> Option<Vec<usize>> {
    let at = args.iter().position(|a| a == "--sizes")?;
    let list = args.get(at + 1)?;
    Some(
        list.split(',')
            .map(|n| n.parse().expect("a size"))
            .collect(),
    )
}

//! The table of known-safe programs: for each, how its operands are read and which of its
//! options write, run a program, page, follow links or recurse. Tested row by row; the checks
//! that read it are in [`super::safe`].

/// How a program's operands are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    /// Every operand is a file or directory it reads.
    Paths,
    /// Operands are text, never opened (`echo`, `basename`).
    Text,
    /// The first operand is a pattern unless `-e`/`-f` gave one; the rest are paths.
    PatternThenPaths,
    /// At most one operand (the input); a second would be an output file.
    OnePath,
    /// Starting points, then an expression (`find`).
    Find,
    /// A print-only script, then paths (`sed -n`).
    Sed,
    /// A read-only subcommand (`git`).
    Git,
}

/// One program of the table.
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) name: &'static str,
    pub(crate) operands: Operands,
    /// Long options (without `--`) that write, execute, page or follow links. Any unambiguous
    /// abbreviation is refused too.
    pub(crate) forbid_long: &'static [&'static str],
    /// Short options that do.
    pub(crate) forbid_short: &'static str,
    /// Short options that take a value (the value is not an operand).
    pub(crate) value_short: &'static str,
    /// Long options that take a value as the next word when written without `=`.
    pub(crate) value_long: &'static [&'static str],
    /// Options (short letters or long names) whose value is a file that is read.
    pub(crate) path_values: &'static [&'static str],
    /// Options that follow symbolic links while recursing: accepted only when no link below the
    /// paths read leads out of the workspace (short letters, then long names).
    pub(crate) follow_short: &'static str,
    pub(crate) follow_long: &'static [&'static str],
    /// Options that make it print the content of every file below a directory (`grep -r`,
    /// `diff -r`): accepted only when no credential file lies below (short letters, long names).
    pub(crate) recursive_short: &'static str,
    pub(crate) recursive_long: &'static [&'static str],
    /// It reads directories recursively whatever its options (`rg`).
    pub(crate) always_recursive: bool,
    /// A directory operand is read file by file, following symbolic links (`diff DIR DIR`,
    /// `diff DIR FILE`): every directory operand is checked like a recursive read that follows
    /// links, whatever the options.
    pub(crate) reads_directories: bool,
}

const fn program(name: &'static str, operands: Operands) -> Program {
    Program {
        name,
        operands,
        forbid_long: &[],
        forbid_short: "",
        value_short: "",
        value_long: &[],
        path_values: &[],
        follow_short: "",
        follow_long: &[],
        recursive_short: "",
        recursive_long: &[],
        always_recursive: false,
        reads_directories: false,
    }
}

/// The known-safe programs and what makes each unsafe. One table, tested row by row.
pub(crate) static PROGRAMS: &[Program] = &[
    Program {
        value_short: "ITw",
        value_long: &[
            "hide",
            "ignore",
            "format",
            "sort",
            "time-style",
            "block-size",
            "quoting-style",
            "indicator-style",
            "time",
            "width",
            "tabsize",
        ],
        ..program("ls", Operands::Paths)
    },
    program("cat", Operands::Paths),
    Program {
        value_short: "nc",
        value_long: &["lines", "bytes"],
        ..program("head", Operands::Paths)
    },
    Program {
        value_short: "ncs",
        value_long: &[
            "lines",
            "bytes",
            "pid",
            "sleep-interval",
            "max-unchanged-stats",
        ],
        ..program("tail", Operands::Paths)
    },
    Program {
        forbid_long: &["files0-from"],
        ..program("wc", Operands::Paths)
    },
    Program {
        // -R follows every link: safe only while no link below leads out of the workspace.
        follow_short: "R",
        follow_long: &["dereference-recursive"],
        recursive_short: "rR",
        recursive_long: &["recursive", "dereference-recursive"],
        value_short: "efmABCdD",
        value_long: &[
            "regexp",
            "file",
            "max-count",
            "label",
            "context",
            "after-context",
            "before-context",
            "binary-files",
            "devices",
            "directories",
            "exclude",
            "exclude-from",
            "exclude-dir",
            "include",
            "group-separator",
        ],
        path_values: &["f", "file", "exclude-from"],
        ..program("grep", Operands::PatternThenPaths)
    },
    Program {
        // --pre runs a program per file, -z runs decompressors, -L follows links.
        forbid_long: &[
            "pre",
            "pre-glob",
            "search-zip",
            "follow",
            "hostname-bin",
            "no-config",
        ],
        forbid_short: "zL",
        value_short: "efgtTmABCjMErd",
        value_long: &[
            "regexp",
            "file",
            "glob",
            "iglob",
            "type",
            "type-not",
            "type-add",
            "type-clear",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "threads",
            "max-columns",
            "encoding",
            "replace",
            "max-depth",
            "ignore-file",
            "sort",
            "sortr",
            "color",
            "colors",
            "context-separator",
            "field-match-separator",
            "field-context-separator",
            "path-separator",
            "max-filesize",
            "engine",
            "dfa-size-limit",
            "regex-size-limit",
        ],
        path_values: &["f", "file", "ignore-file"],
        // Credential files are left out by the config pablo gives it (RIPGREP_CONFIG_PATH,
        // see `process::gitconfig::ripgrep_config`); a glob of the command line could bring
        // them back, and `--no-config` drops the config: see `generic`.
        ..program("rg", Operands::PatternThenPaths)
    },
    Program {
        // Options of find are handled by its own parser (primaries, not dashes).
        ..program("find", Operands::Find)
    },
    Program {
        // -i edits files in place; a script file could hold `w` or `e`.
        forbid_long: &["in-place", "file"],
        forbid_short: "if",
        value_short: "el",
        value_long: &["expression", "line-length"],
        ..program("sed", Operands::Sed)
    },
    Program {
        forbid_long: &[
            "output",
            "compress-program",
            "temporary-directory",
            "files0-from",
        ],
        forbid_short: "oT",
        value_short: "ktS",
        value_long: &[
            "key",
            "field-separator",
            "buffer-size",
            "parallel",
            "batch-size",
            "random-source",
            "sort",
        ],
        path_values: &["random-source"],
        ..program("sort", Operands::Paths)
    },
    Program {
        value_short: "fsw",
        value_long: &[
            "skip-fields",
            "skip-chars",
            "check-chars",
            "all-repeated",
            "group",
        ],
        ..program("uniq", Operands::OnePath)
    },
    Program {
        value_short: "bcdf",
        value_long: &[
            "bytes",
            "characters",
            "delimiter",
            "fields",
            "output-delimiter",
        ],
        ..program("cut", Operands::Paths)
    },
    program("tr", Operands::Text),
    Program {
        value_short: "s",
        value_long: &["separator"],
        ..program("tac", Operands::Paths)
    },
    Program {
        value_short: "bdfhilnsvw",
        value_long: &[
            "body-numbering",
            "section-delimiter",
            "footer-numbering",
            "header-numbering",
            "line-increment",
            "join-blank-lines",
            "number-format",
            "number-separator",
            "starting-line-number",
            "number-width",
        ],
        ..program("nl", Operands::Paths)
    },
    Program {
        value_short: "ct",
        value_long: &["format", "printf"],
        ..program("stat", Operands::Paths)
    },
    Program {
        // -C writes a compiled magic file; -f reads names from a file; -z/-Z may run
        // decompressors.
        forbid_long: &["compile", "files-from", "uncompress", "uncompress-noreport"],
        forbid_short: "CfzZ",
        value_short: "mFeP",
        value_long: &[
            "magic-file",
            "separator",
            "exclude",
            "exclude-quiet",
            "parameter",
        ],
        path_values: &["m", "magic-file"],
        ..program("file", Operands::Paths)
    },
    program("pwd", Operands::Text),
    program("echo", Operands::Text),
    program("printf", Operands::Text),
    program("true", Operands::Text),
    program("false", Operands::Text),
    program("basename", Operands::Text),
    program("dirname", Operands::Text),
    Program {
        value_long: &["relative-to", "relative-base"],
        path_values: &["relative-to", "relative-base"],
        ..program("realpath", Operands::Paths)
    },
    Program {
        value_short: "CUIxXSFWD",
        value_long: &[
            "context",
            "unified",
            "ignore-matching-lines",
            "exclude",
            "exclude-from",
            "starting-file",
            "show-function-line",
            "label",
            "width",
            "tabsize",
            "line-format",
            "old-line-format",
            "new-line-format",
            "unchanged-line-format",
            "old-group-format",
            "new-group-format",
            "changed-group-format",
            "unchanged-group-format",
            "horizon-lines",
            "color",
            "palette",
            "from-file",
            "to-file",
            "ifdef",
        ],
        path_values: &["X", "exclude-from", "from-file", "to-file"],
        recursive_short: "r",
        recursive_long: &["recursive"],
        // GNU diff follows links inside the directories it compares (unless
        // --no-dereference), with or without -r.
        reads_directories: true,
        ..program("diff", Operands::Paths)
    },
    Program {
        value_short: "in",
        value_long: &["ignore-initial", "bytes"],
        ..program("cmp", Operands::Paths)
    },
    Program {
        // -o writes the listing to a file, -R writes HTML files into every directory, -l
        // follows links.
        forbid_long: &["fromfile", "fromtabfile"],
        forbid_short: "oRl",
        value_short: "LPIHT",
        value_long: &[
            "charset",
            "filelimit",
            "timefmt",
            "sort",
            "hintro",
            "houtro",
            "info",
            "gitfile",
            "infofile",
        ],
        // Files it reads: patterns (`--gitfile`, `--infofile`) and HTML it copies into its
        // output (`--hintro`, `--houtro`).
        path_values: &["gitfile", "infofile", "hintro", "houtro"],
        ..program("tree", Operands::Paths)
    },
    Program {
        forbid_long: &["files0-from", "dereference"],
        forbid_short: "L",
        value_short: "dBtX",
        value_long: &[
            "max-depth",
            "block-size",
            "threshold",
            "exclude",
            "exclude-from",
            "time-style",
        ],
        path_values: &["X", "exclude-from"],
        ..program("du", Operands::Paths)
    },
    program("git", Operands::Git),
];

"""`envcheck completion bash|zsh`: a completion script generated from envcheck's own parser,
so every verb, flag and value it offers is one the parser takes: after a flag, its choices or
the list its Option declares to complete, else the shell's file completion (zsh runs the bash
one through bashcompinit). Install: `eval "$(envcheck completion bash)"` in ~/.bashrc (or
~/.zshrc)."""

from __future__ import annotations

import argparse

from envcheck.report import Report, Result, Status

SHELLS = ("bash", "zsh")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=SHELLS)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--")})


def _values(parser: argparse.ArgumentParser) -> dict[str, list[str] | None]:
    """Each flag that takes a value -> the values completion offers after it: its choices, or
    the ``complete`` list its Option declares (``--smoke``'s test names); None where neither
    says (a file, a number: the shell's own file completion)."""
    out: dict[str, list[str] | None] = {}
    for a in parser._actions:
        if a.nargs == 0 or not a.option_strings:
            continue
        known = a.choices or getattr(a, "complete", None)
        for flag in a.option_strings:
            out[flag] = [str(v) for v in known] if known else None
    return out


def values_by_path() -> dict[tuple[str, str], list[str] | None]:
    """('verify node', '--level') -> ['1', '2', '3']: what may follow each flag of each verb."""
    from envcheck.cli import build_parser

    top = build_parser(None)
    out: dict[tuple[str, str], list[str] | None] = {}
    for verb, parser in _subparsers(top).items():
        for sub, sub_parser in (_subparsers(parser) or {"": parser}).items():
            path = f"{verb} {sub}".strip()
            out.update({(path, f): v for f, v in _values(sub_parser).items()})
    return out


def words_by_path() -> dict[str, list[str]]:
    """'verify node' -> what may follow it: the sub-verbs, or the verb's flags ('' for the
    top level)."""
    from envcheck.cli import build_parser

    top = build_parser(None)
    out = {"": sorted(_subparsers(top)) + _flags(top)}
    for verb, parser in _subparsers(top).items():
        subs = _subparsers(parser)
        out[verb] = sorted(subs) if subs else _flags(parser)
        for sub, sub_parser in subs.items():
            out[f"{verb} {sub}"] = _flags(sub_parser)
    return out


def _value_cases() -> str:
    """The bash case arms for a flag's value: its values, or none (file completion)."""
    arms = []
    for (path, flag), values in sorted(values_by_path().items()):
        offered = f'words="{" ".join(values)}"' if values else "return 0"
        arms.append(f'        "{path} {flag}") {offered} ;;')
    return "\n".join(arms)


def bash_script() -> str:
    paths = words_by_path()
    # longest paths first: `verify node` is matched before `verify`
    cases = "\n".join(
        f'        "{path}") words="{" ".join(paths[path])}" ;;'
        for path in sorted(paths, key=lambda p: (-len(p.split()), p))
    )
    return f"""# envcheck completion (bash), written by `envcheck completion bash`
_envcheck() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local path="" word words="" i
    for ((i = 1; i < COMP_CWORD; i++)); do  # the verb words typed so far, flags skipped
        word="${{COMP_WORDS[i]}}"
        case "$word" in -*) continue ;; esac
        case "${{path:+$path }}$word" in
{chr(10).join(f'            "{p}") path="{p}" ;;' for p in sorted(paths) if p)}
        esac
    done
    COMPREPLY=()
    case "$path $prev" in  # a flag's value: its choices, or the shell's file completion
{_value_cases()}
    esac
    [ -z "$words" ] && case "$path" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _envcheck envcheck
"""


def script(shell: str) -> str:
    if shell == "zsh":
        return ("# envcheck completion (zsh): the bash completion through bashcompinit, on zsh's\n"
                "# completion system (started here when the rc file has not: compdef unset)\n"
                "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }\n"
                "autoload -U +X bashcompinit && bashcompinit\n" + bash_script())
    return bash_script()


def run(args: argparse.Namespace) -> Report:
    text = script(args.shell)
    result = Result("completion", Status.PASS, f"{args.shell} completion script", group="cli")
    return Report(f"envcheck completion {args.shell}", results=(result,), output=text)

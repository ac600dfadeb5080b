"""`envcheck completion bash|zsh`: a completion script generated from envcheck's own parser,
so every verb and flag it offers is one the parser takes (zsh runs the bash one through
bashcompinit). Install: `eval "$(envcheck completion bash)"` in ~/.bashrc (or ~/.zshrc)."""

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


def bash_script() -> str:
    paths = words_by_path()
    # longest paths first: `verify node` is matched before `verify`
    cases = "\n".join(
        f'        "{path}") words="{" ".join(paths[path])}" ;;'
        for path in sorted(paths, key=lambda p: (-len(p.split()), p))
    )
    return f"""# envcheck completion (bash), written by `envcheck completion bash`
_envcheck() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" word words i
    for ((i = 1; i < COMP_CWORD; i++)); do  # the verb words typed so far, flags skipped
        word="${{COMP_WORDS[i]}}"
        case "$word" in -*) continue ;; esac
        case "${{path:+$path }}$word" in
{chr(10).join(f'            "{p}") path="{p}" ;;' for p in sorted(paths) if p)}
        esac
    done
    case "$path" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _envcheck envcheck
"""


def script(shell: str) -> str:
    if shell == "zsh":
        return ("# envcheck completion (zsh): the bash completion through bashcompinit\n"
                "autoload -U +X bashcompinit && bashcompinit\n" + bash_script())
    return bash_script()


def run(args: argparse.Namespace) -> Report:
    text = script(args.shell)
    result = Result("completion", Status.PASS, f"{args.shell} completion script", group="cli")
    return Report(f"envcheck completion {args.shell}", results=(result,), output=text)

"""``rageval team check`` and ``rageval audit verify``: an admin's checks of a dashboard served for a team.

    rageval team check team.toml --claims claims.json [--json]   who these ID-token claims are, their role, the entry
    rageval audit verify [RUNS_DIR] [--json]                      the audit log's hash chain, entry by entry

``team check`` decides exactly as the dashboard does at sign-in (``email_verified`` read strictly, groups from
``groups_claim``), so a team.toml can be checked before anyone signs in. Exit status 0 with a role, 1 without one.
"""

from __future__ import annotations

import argparse
import json


def cmd_team_check(args: argparse.Namespace) -> int:
    from rageval.team.config import check_claims_file

    result = check_claims_file(args.team_toml, args.claims)
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(f"identity: {result.identity or '(none: the sign-in would be refused)'}")
        print(f"role:     {result.role or '(none: a page saying so, no run data)'}")
        print(f"rule:     {result.rule or '(no entry matches)'}")
        for note in result.notes:
            print(f"note:     {note}")
    return 0 if result.role else 1


def cmd_audit_verify(args: argparse.Namespace) -> int:
    from rageval.paths import user_runs_dir
    from rageval.store.audit import verify

    result = verify(args.runs_dir or user_runs_dir())
    print(json.dumps(result.as_json(), indent=2) if args.json else result.summary())
    return 0 if result.ok else 1


def add_parsers(sub) -> None:
    team = sub.add_parser("team", help="check a team.toml: which role a person's ID-token claims get, and from "
                                       "which entry", description=__doc__.split("\n")[0],
                          epilog=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    team.set_defaults(handler=cmd_team_check)  # the one subcommand so far (argparse requires it)
    team_sub = team.add_subparsers(dest="team_command", required=True)
    check = team_sub.add_parser("check", help="the identity, role and matching entry for a set of ID-token claims")
    check.add_argument("team_toml", metavar="TEAM_TOML")
    check.add_argument("--claims", required=True, metavar="CLAIMS_JSON",
                       help="a JSON object of ID-token claims (sub, email, email_verified, groups, ...)")
    check.add_argument("--json", action="store_true", help='{"identity": ..., "role": ... or null, "rule": ...}')
    check.set_defaults(handler=cmd_team_check)
    audit = sub.add_parser("audit", help="verify the team audit log's hash chain: exit 1 naming the first entry "
                                         "that does not verify", description=__doc__.split("\n")[0],
                           epilog=__doc__.split("\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.set_defaults(handler=cmd_audit_verify)
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_sub.add_parser("verify", help="walk the hash chain of audit.sqlite in RUNS_DIR")
    verify.add_argument("runs_dir", nargs="?", metavar="RUNS_DIR",
                        help="the runs folder holding audit.sqlite, or the file (default: $RAGEVAL_RUNS_DIR, "
                             "else ~/.local/share/rageval/runs)")
    verify.add_argument("--json", action="store_true", help='{"ok": ..., "first_bad_entry": ..., "problem": ...}')
    verify.set_defaults(handler=cmd_audit_verify)

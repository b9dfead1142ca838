"""``rageval serve``: the dashboard, for you on this machine (the default) or for a team with sign-in and roles.

    rageval serve                                   # http://127.0.0.1:8501, no sign-in (local mode)
    rageval serve --team team.toml --port 8501      # sign-in (OpenID Connect) and roles from team.toml
    rageval serve --address 0.0.0.0 --open-to-everyone   # no sign-in, reachable by anyone who reaches this machine

Team mode reads the provider's client secret and the cookie secret from $RAGEVAL_OIDC_CLIENT_SECRET and
$RAGEVAL_COOKIE_SECRET, or from --secrets FILE (TOML: client_secret, cookie_secret; outside the checkout).
"""

from __future__ import annotations

import argparse
import sys


def cmd_serve(args: argparse.Namespace) -> int:
    from rageval.team.serve import plan_serve, run_plan

    plan = plan_serve(address=args.address, port=args.port, team=args.team, open_to_everyone=args.open_to_everyone,
                      secrets_file=args.secrets)
    return run_plan(plan, announce=lambda line: print(line, file=sys.stderr, flush=True))


def add_parsers(sub) -> None:
    parser = sub.add_parser(
        "serve", help="serve the dashboard: on 127.0.0.1 for you, or with --team team.toml for a team (sign-in "
                      "through an OpenID Connect provider, roles, audit log)",
        description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--team", metavar="TEAM_TOML", help="serve for a team: the provider and who has which role "
                                                           "(viewer, annotator, operator, admin)")
    parser.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this "
                                                               "machine only; put a TLS reverse proxy in front)")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--secrets", metavar="FILE", help="team mode: a TOML file outside the checkout with "
                                                          "client_secret and cookie_secret (default: the "
                                                          "environment variables)")
    parser.add_argument("--open-to-everyone", action="store_true",
                        help="without --team, allow an address beyond this machine: the dashboard will be open to "
                             "everyone who reaches it (every run readable, jobs, uploads and labels by anyone)")
    parser.set_defaults(handler=cmd_serve)

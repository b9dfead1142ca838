"""``rageval serve``: the dashboard started the way ``python -m ui.serve`` starts it (a ``streamlit run app.py``
with the pages' modules preloaded), locally by default, or for a team with sign-in and roles.

Local mode (no ``--team``) is the dashboard as it always was: 127.0.0.1, no sign-in. Bound to an address beyond
loopback without ``--team`` it is refused, unless ``--open-to-everyone`` says that everyone who reaches it may read
every run, start jobs, upload and label. With ``--team team.toml`` the file is checked (:mod:`rageval.team.config`),
the provider's client secret and the cookie secret are read from the environment or a secrets file outside the
checkout, and Streamlit gets them as its ``[auth]`` secrets in a file of a private temporary folder (mode 600,
outside the checkout, ``--secrets.files``), removed when the server stops. The engine never imports the dashboard:
the server is a subprocess.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from rageval.errors import RagevalError
from rageval.paths import REPO_ROOT
from rageval.team.config import SECRET_ENVS, TEAM_ENV, load_secrets, load_team_config, streamlit_auth_secrets

DEFAULT_PORT = 8501


class ServeError(RagevalError):
    """A ``rageval serve`` that must not start as asked (one line saying why and what to do)."""


@dataclass(frozen=True)
class ServePlan:
    """What ``rageval serve`` runs: the command, its environment (additions) and, in team mode, the text of
    Streamlit's secrets file (written only when the server starts, into a private temporary folder)."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    secrets_text: str | None = None
    team: Path | None = None


def is_loopback(address: str) -> bool:
    """Whether ``address`` reaches only this machine (127.0.0.0/8, ::1, localhost)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def plan_serve(*, address: str = "127.0.0.1", port: int = DEFAULT_PORT, team: str | os.PathLike | None = None,
               open_to_everyone: bool = False, secrets_file: str | os.PathLike | None = None,
               environ: Mapping[str, str] | None = None) -> ServePlan:
    """Check the options and build the plan; :class:`ServeError` or
    :class:`~rageval.team.config.TeamConfigError` (one line per problem) when the server must not start."""
    environ = os.environ if environ is None else environ
    if not 0 < port < 65536:
        raise ServeError(f"--port {port}: expected a port number (1-65535)")
    if team is None:
        if secrets_file is not None:
            raise ServeError("--secrets is for --team (the sign-in's secrets); without --team there is no sign-in")
        if not is_loopback(address) and not open_to_everyone:
            raise ServeError(f"--address {address} is reachable from other machines, and without --team there is no "
                             "sign-in: anyone who reaches it could read every run, start jobs, upload and label. "
                             "Serve it with --team team.toml, or pass --open-to-everyone if that is what you want")
    elif open_to_everyone:
        raise ServeError("--open-to-everyone contradicts --team (which signs people in); pass one of them")
    command = [sys.executable, "-m", "ui.serve", "--server.address", address, "--server.port", str(port),
               "--server.headless", "true"]
    if team is None:
        return ServePlan(command)
    config = load_team_config(team)
    redirect = urlparse(config.redirect_uri)
    if redirect.hostname and is_loopback(redirect.hostname) and (redirect.port or 80) != port:
        raise ServeError(f"{config.path}: [provider] redirect_uri {config.redirect_uri} names port "
                         f"{redirect.port or 80} of this machine, but the dashboard would listen on {port}")
    secrets = load_secrets(environ, secrets_file, checkout=REPO_ROOT)
    # An error outside a page's own handling shows as one redacted line, never a traceback or a server path: the
    # trace goes to the server log (app.py gives a page's errors an id; this covers callbacks and app.py itself).
    command += ["--client.showErrorDetails", "none"]
    return ServePlan(command, {TEAM_ENV: str(config.path.resolve())}, streamlit_auth_secrets(config, secrets),
                     config.path)


def server_environment(environ: Mapping[str, str], plan: ServePlan) -> dict[str, str]:
    """The Streamlit server's environment: ``environ`` and the plan's additions, without the team's secrets
    (:data:`~rageval.team.config.SECRET_ENVS`; in team mode the server reads them from its secrets file), so
    neither the server nor the job workers it starts hold them in their environment."""
    return {key: value for key, value in {**environ, **plan.env}.items() if key not in SECRET_ENVS}


def run_plan(plan: ServePlan, announce=print) -> int:
    """Start the server of ``plan`` and wait for it (Ctrl-C or SIGTERM stop it); its exit status. The secrets
    file, if any, lives only as long as the server."""
    private = None
    command = list(plan.command)
    try:
        if plan.secrets_text is not None:
            private = Path(tempfile.mkdtemp(prefix="rageval-serve-", dir=os.environ.get("XDG_RUNTIME_DIR")))
            secrets = private / "secrets.toml"
            descriptor = os.open(secrets, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(plan.secrets_text)
            command += ["--secrets.files", str(secrets)]
            announce(f"rageval serve: team mode ({plan.team}); sign-in required, roles from team.toml")
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=server_environment(os.environ, plan))
        previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate())
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.terminate()
            return process.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)

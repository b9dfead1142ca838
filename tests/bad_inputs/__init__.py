"""A corpus of broken inputs, each built on the spot from a good tiny file (no binary blob is committed): what a user
can put in the runs folder (run files and the five other kinds of rageval SQLite file, damaged in every way we know),
upload files, URL parameters and command-line arguments. ``tests/ui/test_bad_inputs.py`` opens each through the command
line and the dashboard; ``python -m tests.bad_inputs.report`` prints the table of kinds, counts and results.

* :mod:`.good` the good tiny files of each kind (a run with LLM-retEval facts, an attribution run, an IUM run, an
  annotation file, a jobs database, an LLM cache);
* :mod:`.damage` damage any SQLite file can suffer (empty, gzip, random bytes, truncated, pages zeroed or overwritten,
  another kind, a newer schema, a folder or a link in its place, a hot journal, ...);
* :mod:`.files` the bad files of each kind: the generic damage for every kind, plus what only one kind can get wrong
  (settings that are not a JSON object, undecodable text, a table of another shape, rows that point nowhere, ...);
* :mod:`.arguments` upload files, URL parameters and command-line arguments.
"""

from tests.bad_inputs.arguments import CLI_CASES, UPLOAD_CASES, URL_CASES, CliCase, UploadCase, UrlCase
from tests.bad_inputs.files import FILE_INPUTS, BadFile, inputs_of

__all__ = ["CLI_CASES", "FILE_INPUTS", "UPLOAD_CASES", "URL_CASES", "BadFile", "CliCase", "UploadCase", "UrlCase",
           "inputs_of"]

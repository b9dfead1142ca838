"""The two upload forms behind one call: :func:`convert_upload` (files in memory) and
:func:`convert_upload_paths` (files on disk, ``rageval upload``); each form alone (:func:`convert_trec_upload`,
:func:`convert_jsonl_upload`). The one place a read upload becomes a run: the readers return what they read
(:class:`~rageval.upload.parts.UploadRead`) and :func:`~rageval.upload.build.finish_upload` builds the run here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rageval.upload.build import finish_upload
from rageval.upload.jsonl import read_jsonl_upload
from rageval.upload.problems import DEFAULT_LIMITS, UploadError, UploadFile, UploadLimits, UploadResult
from rageval.upload.trec import read_trec_upload

#: The two upload forms and the files each takes (``convert_upload``'s ``files`` keys); ``qrels`` is optional.
FORMS = {"trec": ("run", "qrels", "queries", "passages"), "jsonl": ("jsonl",)}


def convert_trec_upload(run_file: UploadFile, queries_file: UploadFile, passages_file: UploadFile,
                        qrels_file: UploadFile | None = None, *, dataset: str = "uploaded",
                        retriever: str | None = None, model: str | None = None,
                        limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """A TREC run (+ qrels) with its queries and passages JSONL as a :class:`~rageval.store.Run`: read and validated
    by :func:`rageval.upload.trec.read_trec_upload`, then built (measures, settings) by :func:`finish_upload`."""
    return finish_upload(read_trec_upload(run_file, queries_file, passages_file, qrels_file, dataset=dataset,
                                          retriever=retriever, model=model, limits=limits))


def convert_jsonl_upload(file: UploadFile, *, dataset: str = "uploaded", retriever: str | None = None,
                         model: str | None = None, limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """A JSONL run with answers as a :class:`~rageval.store.Run`: read and validated by
    :func:`rageval.upload.jsonl.read_jsonl_upload`, then built (measures, settings) by :func:`finish_upload`."""
    return finish_upload(read_jsonl_upload(file, dataset=dataset, retriever=retriever, model=model, limits=limits))


def convert_upload(form: str, files: Mapping[str, UploadFile | None], *, dataset: str = "uploaded",
                   retriever: str | None = None, model: str | None = None,
                   limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """:func:`convert_trec_upload` (``form="trec"``: files ``run``, ``queries``, ``passages``, optional ``qrels``)
    or :func:`convert_jsonl_upload` (``form="jsonl"``: file ``jsonl``); a missing required file raises
    UploadError."""
    if form not in FORMS:
        raise UploadError(f"upload form {form!r}: expected one of {', '.join(FORMS)}")
    given = {key: file for key, file in files.items() if file is not None}
    missing = [key for key in FORMS[form] if key != "qrels" and key not in given]
    if missing:
        raise UploadError(f"missing the {', '.join(missing)} file(s) of a {form} upload")
    dataset, retriever, model = dataset or "uploaded", retriever or None, model or None
    if form == "jsonl":
        return convert_jsonl_upload(given["jsonl"], dataset=dataset, retriever=retriever, model=model, limits=limits)
    return convert_trec_upload(given["run"], given["queries"], given["passages"], given.get("qrels"),
                               dataset=dataset, retriever=retriever, model=model, limits=limits)


def convert_upload_paths(form: str, paths: Mapping[str, Path | None], *, dataset: str = "uploaded",
                         retriever: str | None = None, model: str | None = None,
                         limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """:func:`convert_upload` of files on disk (``paths``: the file of each key of ``FORMS[form]``, None where not
    given); a folder, a missing or an unreadable file raises UploadError naming it."""

    def read(path: Path) -> UploadFile:
        if path.is_dir():
            raise UploadError(f"{path}: is a folder; expected a file")
        if not path.exists():
            raise UploadError(f"{path}: no such file")
        try:
            return UploadFile.from_path(path, limits)
        except OSError as error:
            raise UploadError(f"{path}: cannot be read ({error.strerror or error})") from None

    return convert_upload(form, {key: read(path) if path else None for key, path in paths.items()},
                          dataset=dataset, retriever=retriever, model=model, limits=limits)

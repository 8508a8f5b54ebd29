"""One settings mechanism: every declared setting of every front door is read from its
``SEMLOOP_*`` variable, checked at its bounds, and shared settings have one name."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.errors import ConfigError
from otel_semloop.processor.config import Config, GuardMode
from otel_semloop.service.config import ServiceConfig
from otel_semloop.settings import BufferingSettings, Spec, environment_variables, load, specs

ENDPOINT = {"export_endpoint": "http://127.0.0.1:4317"}


PREFIX = {Config: "SEMLOOP_", ServiceConfig: "SEMLOOP_", DetectorConfig: "SEMLOOP_DETECT_"}


def build(cls: type, environ: dict[str, str], **values: Any) -> Any:
    if cls is DetectorConfig:
        return DetectorConfig.from_env(environ, **values)
    if cls is ServiceConfig:
        return ServiceConfig.load(environ=environ, **{**ENDPOINT, **values})
    return Config.from_env(environ, **values)


def sample(spec: Spec, name: str = "") -> tuple[str, Any]:
    """A valid value of setting ``name`` as text and as the typed value it must read as."""
    if name.endswith("_endpoint"):
        return "http://127.0.0.1:9999", "http://127.0.0.1:9999"
    if spec.kind == "bool":
        return "false", False
    if spec.kind == "int":
        value = int(max(spec.minimum or 0, 1)) + 2
        return str(value), value
    if spec.kind == "float":
        return ("0.75", 0.75) if spec.maximum is not None and spec.maximum < 7.5 else ("7.5", 7.5)
    if spec.kind == "choice":
        choices = spec.choices
        value = list(choices)[-1] if isinstance(choices, type) else choices[-1]  # type: ignore[index]
        return str(getattr(value, "value", value)), value
    return "127.0.0.1:9999", "127.0.0.1:9999"


#: Settings whose valid values depend on other settings or on files (certificates that come
#: in pairs, exporter lists): their reading is the same, their checks are tested with the
#: service (tests/service/test_security.py, test_operations.py).
ENTANGLED = {
    "export_endpoint",
    "export_certificate",
    "export_client_key",
    "export_client_certificate",
    "tls_certificate",
    "tls_key",
    "tls_client_ca",
    "metrics_exporter",
    "stale_window",  # must stay above stale_window_novel (checked in tests/detectors)
    "stale_window_novel",
}

CASES = [
    pytest.param(cls, name, spec, id=f"{cls.__name__}.{name}")
    for cls in (Config, ServiceConfig, DetectorConfig)
    for name, spec in specs(cls).items()
    if name not in ENTANGLED
]


@pytest.mark.parametrize(("cls", "name", "spec"), CASES)
def test_every_setting_is_read_from_its_semloop_variable(cls: type, name: str, spec: Spec) -> None:
    variable = environment_variables(cls, PREFIX[cls])[name]
    assert variable == PREFIX[cls] + name.upper()
    text, value = sample(spec, name)
    config = build(cls, {variable: text})
    assert getattr(config, name) == value
    # An explicit option wins over the variable.
    default = next(f.default for f in dataclasses.fields(cls) if f.name == name)
    if default is not None:  # (None as an option means "not given")
        assert getattr(build(cls, {variable: text}, **{name: default}), name) == default


@pytest.mark.parametrize(("cls", "name", "spec"), [c for c in CASES if c.values[2].kind in ("int", "float")])
def test_every_numeric_setting_is_refused_just_past_its_bound_naming_the_variable(
    cls: type, name: str, spec: Spec
) -> None:
    variable = environment_variables(cls, PREFIX[cls])[name]
    if spec.minimum is not None:  # the bound itself is valid, just below it is not
        inside, outside = spec.minimum, spec.minimum - (1 if spec.kind == "int" else 0.0005)
    else:  # an exclusive bound: just above is valid, the bound itself is not
        assert spec.above is not None
        inside, outside = spec.above + (1 if spec.kind == "int" else 0.0005), spec.above
    assert getattr(build(cls, {}, **{name: inside}), name) == inside
    with pytest.raises(ConfigError, match=variable):
        build(cls, {variable: str(outside)})
    with pytest.raises(ConfigError, match=name):
        build(cls, {}, **{name: outside})
    with pytest.raises(ConfigError, match=variable):
        build(cls, {variable: "many"})


def test_the_settings_both_front_doors_share_have_one_name_and_one_variable() -> None:
    shared = set(specs(BufferingSettings))
    assert shared <= set(specs(Config)) and shared <= set(specs(ServiceConfig))
    for name in shared:
        assert specs(Config)[name] == specs(ServiceConfig)[name] == specs(BufferingSettings)[name]
    env = {
        "SEMLOOP_GRACE_SECONDS": "3",
        "SEMLOOP_SCORING_BUDGET_SECONDS": "9",
        "SEMLOOP_MAX_STUCK_SCORERS": "0",
    }
    processor, service = build(Config, env), build(ServiceConfig, env)
    for config in (processor, service):
        assert (config.grace_seconds, config.scoring_budget_seconds, config.max_stuck_scorers) == (
            3.0,
            9.0,
            0,
        )
    assert processor.buffer_limits().grace == service.buffer_limits().grace == 3.0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("grace", "grace_seconds"),
        ("idle", "idle_seconds"),
        ("max_age", "max_age_seconds"),
        ("scoring_budget", "scoring_budget_seconds"),
        ("tick", "tick_seconds"),
        ("drain_timeout", "shutdown_timeout_seconds"),
    ],
)
def test_a_former_service_option_name_still_works_with_a_deprecation_warning(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=new):
        config = ServiceConfig.load(**ENDPOINT, **{old: 3.5})
    assert getattr(config, new) == 3.5


def test_a_former_name_in_a_config_file_warns_and_names_the_file(tmp_path: Any) -> None:
    path = tmp_path / "serve.toml"
    path.write_text('[serve]\nexport_endpoint = "http://127.0.0.1:4317"\ngrace = 4.0\n')
    with pytest.warns(DeprecationWarning, match="serve.toml: grace is deprecated"):
        assert ServiceConfig.load(path).grace_seconds == 4.0


def test_layers_apply_in_order_environment_then_file_then_flags(tmp_path: Any) -> None:
    path = tmp_path / "serve.toml"
    path.write_text("[serve]\ngrace_seconds = 4.0\nidle_seconds = 50.0\n")
    env = {
        "SEMLOOP_GRACE_SECONDS": "3",
        "SEMLOOP_IDLE_SECONDS": "30",
        "SEMLOOP_MAX_AGE_SECONDS": "99",
        **{"SEMLOOP_EXPORT_ENDPOINT": "http://127.0.0.1:4317"},
    }
    config = ServiceConfig.load(path, environ=env, idle_seconds=60.0)
    assert (config.max_age_seconds, config.grace_seconds, config.idle_seconds) == (99.0, 4.0, 60.0)


def test_unknown_names_are_refused() -> None:
    with pytest.raises(TypeError, match="gracce_seconds"):
        Config.from_env({}, gracce_seconds=1)
    with pytest.raises(TypeError, match="grace"):
        Config.from_env({}, grace=1)  # the processor never had the old names
    with pytest.raises(ConfigError, match="serve: unknown option"):
        ServiceConfig.load(**ENDPOINT, gracce=1)


def test_direct_construction_is_checked_and_normalised_too() -> None:
    config = Config(grace_seconds=1, live_guard="warn")  # type: ignore[arg-type]
    assert config.grace_seconds == 1.0 and isinstance(config.grace_seconds, float)
    assert config.live_guard is GuardMode.WARN
    with pytest.raises(ConfigError, match="max_traces"):
        Config(max_traces=0)
    with pytest.raises(ConfigError, match="serve: scoring_threads"):
        ServiceConfig(**ENDPOINT, scoring_threads=0)


def test_an_optional_address_can_be_switched_off_by_variable() -> None:
    config = ServiceConfig.load(
        environ={"SEMLOOP_GRPC": "off", **{"SEMLOOP_EXPORT_ENDPOINT": ENDPOINT["export_endpoint"]}}
    )
    assert config.grpc is None and config.http == "127.0.0.1:4318"


def test_no_warning_without_former_names() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(Config, prefix="SEMLOOP_", environ={}, layers=[("", {"grace_seconds": 1})])

"""Old home of the zero-code configurator, kept so an environment whose installed metadata
still names ``otel_semloop.autoconfig:SemloopConfigurator`` (an install made before the
processor moved into ``otel_semloop.processor``) keeps working. New code: import
:mod:`otel_semloop.processor.autoconfig`."""

from otel_semloop.processor.autoconfig import SemloopConfigurator

__all__ = ["SemloopConfigurator"]

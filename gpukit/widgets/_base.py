"""The common frame of gpukit's widgets: controls, a matplotlib figure, a text summary.

A widget is ipywidgets controls above a PNG of a matplotlib figure (drawn with the Agg renderer,
never pyplot, so it works in any kernel and in CI) and a text summary beside it. Subclasses ask the
pure modules for every number and only draw them. Nothing here computes anything about GPUs.
"""

from __future__ import annotations

import base64
import html
import io
import numbers
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import ipywidgets as ipw
from matplotlib.figure import Figure

from ..errors import GpukitError

FIGURE_DPI = 80


class WidgetControlError(GpukitError, ValueError):
    """A widget was asked to set a control it does not have, or to a value no user could pick."""


def field(row: Any, *names: str, default: Any = None) -> Any:
    """The first of `names` that `row` has, as an attribute or a mapping key."""
    for name in names:
        if isinstance(row, dict):
            if name in row:
                return row[name]
        elif hasattr(row, name):
            return getattr(row, name)
    return default


def _same(value: Any, option: Any) -> bool:
    """Whether a value given to `set` is the dropdown's option (no numpy broadcasting)."""
    return type(value) is type(option) and value == option


def check_flag(name: str, value: Any) -> bool:
    """`value` if it is True or False, else a WidgetControlError naming `name`."""
    if not isinstance(value, bool):
        raise WidgetControlError(f"{name} must be True or False, got {value!r}")
    return value


def render_png(figure: Figure) -> bytes:
    """The figure as PNG bytes (Agg, whatever matplotlib backend the kernel uses)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=FIGURE_DPI)
    return buffer.getvalue()


def int_slider(description: str, value: int, low: int, high: int, step: int = 1,
               width: str = "340px") -> ipw.IntSlider:
    """An integer slider that redraws on release; `value` must be in low..high."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise WidgetControlError(f"{description} must be an int from {low} to {high}, got {value!r}")
    # continuous_update=False: redraw when the slider is released, not at every pixel dragged.
    return ipw.IntSlider(value=value, min=low, max=high, step=step, description=description,
                         continuous_update=False, style={"description_width": "initial"},
                         layout=ipw.Layout(width=width))


class GpukitWidget:
    """Controls, a figure and a summary; `.set(**values)`, `.summary`, `.figure`, `.widget`.

    Subclasses fill `self.controls` (name -> ipywidgets control) and implement `_draw(figure)`,
    which draws the current state on the cleared figure and returns the summary text.
    """

    kind = "widget"

    def __init__(self, controls: dict[str, ipw.ValueWidget], *, figsize: tuple[float, float],
                 extra: list[ipw.Widget] | None = None):
        self.controls = controls
        self._figure = Figure(figsize=figsize, dpi=FIGURE_DPI)
        self._image = ipw.Image(format="png", layout=ipw.Layout(max_width="100%"))
        self._text = ipw.HTML(layout=ipw.Layout(min_width="300px", max_width="640px"))
        self._summary = ""
        self._holding = 0
        self._listeners: list[Callable[[GpukitWidget], None]] = []
        for control in controls.values():
            control.observe(self._on_change, names="value")
        top = ipw.HBox([*controls.values(), *(extra or [])],
                       layout=ipw.Layout(flex_flow="row wrap"))
        body = ipw.HBox([self._image, self._text], layout=ipw.Layout(flex_flow="row wrap"))
        self.widget = ipw.VBox([top, body])
        self.widget.add_class("gpukit-widget")
        self._text.add_class("gpukit-summary")

    # -- the programmatic API --------------------------------------------------------------
    @property
    def summary(self) -> str:
        """The text shown beside the plot, for the current control values."""
        return self._summary

    @property
    def figure(self) -> Figure:
        """The matplotlib figure (drawn with the current control values)."""
        return self._figure

    @property
    def png(self) -> bytes:
        """The figure as shown, a PNG."""
        return bytes(self._image.value)

    @property
    def values(self) -> dict[str, Any]:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> GpukitWidget:
        """Change controls as a user would (checked against what the control offers), then
        redraw once. Returns the widget, so `w.set(n=100).summary` reads well."""
        for name in values:
            self._check_name(name)
        with self.hold():
            for name, value in values.items():  # in order: a device can change slider ranges
                value = self._normalize(name, value)
                self._check(name, value)
                self.controls[name].value = value
        return self

    def update(self) -> None:
        """Redraw the figure and the summary from the current control values."""
        self._figure.clear()
        self._summary = self._draw(self._figure)
        self._image.value = render_png(self._figure)
        self._text.value = ("<pre style='white-space: pre-wrap; word-break: normal; "
                            "overflow-wrap: break-word; font-size: 12px; margin: 4px'>"
                            f"{html.escape(self._summary)}</pre>")
        for listener in self._listeners:
            listener(self)

    @contextmanager
    def hold(self) -> Iterator[GpukitWidget]:
        """Change several controls with one redraw at the end."""
        self._holding += 1
        try:
            yield self
        finally:
            self._holding -= 1
            if not self._holding:  # also after an error: show the controls' actual state
                self.update()

    # -- display -----------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The live widget for JupyterLab, the figure for static renderers, and the summary as
        # text/plain: nbval compares text/plain and skips widget views and images.
        bundle = self.widget._repr_mimebundle_()
        bundle["text/plain"] = self._summary
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display
        display(self._repr_mimebundle_(), raw=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self._summary.splitlines()[0] if self._summary else ''}>"

    # -- for subclasses ----------------------------------------------------------------------
    def _draw(self, figure: Figure) -> str:
        raise NotImplementedError

    def _on_change(self, change: dict) -> None:
        if not self._holding:
            self.update()

    def _check_name(self, name: str) -> None:
        if name not in self.controls:
            raise WidgetControlError(
                f"{self.kind} has no control {name!r}; its controls are: "
                f"{', '.join(self.controls)}")

    def _check(self, name: str, value: Any) -> None:
        control = self.controls[name]
        if control.disabled:
            raise WidgetControlError(f"{self.kind}: control {name!r} is disabled ({self._why(name)})")
        if isinstance(control, (ipw.IntSlider, ipw.BoundedIntText)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise WidgetControlError(
                    f"{self.kind}: {name} must be an int, got {type(value).__name__} {value!r}")
            if not control.min <= value <= control.max:
                raise WidgetControlError(
                    f"{self.kind}: {name}={value} is outside the slider's range "
                    f"{control.min}..{control.max}")
        elif isinstance(control, ipw.Checkbox):
            if not isinstance(value, bool):
                raise WidgetControlError(f"{self.kind}: {name} must be True or False, got {value!r}")
        elif isinstance(control, ipw.Dropdown):
            options = [o[1] if isinstance(o, tuple) else o for o in control.options]
            if not any(_same(value, option) for option in options):
                raise WidgetControlError(
                    f"{self.kind}: {name}={value!r} is not one of the choices: "
                    f"{', '.join(map(str, options))}")

    def _why(self, name: str) -> str:
        return "it is fixed"

    def _normalize(self, name: str, value: Any) -> Any:
        """The control value `value` stands for (a device alias -> the profile's name, ...)."""
        return value

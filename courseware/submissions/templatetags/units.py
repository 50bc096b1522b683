from django import template

register = template.Library()

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


@register.filter
def si(value: float | None) -> str:
    """562031167.9 → '562 M': rates read better with an SI prefix than with nine digits."""
    if value is None:
        return "—"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.3g} "

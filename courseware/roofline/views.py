import math

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from courseware.roofline.devices import AI_MAX, AI_MIN, DATASHEET_DEVICES
from courseware.roofline.presenters import (
    device_rows,
    operation_rows,
    result_for,
    script_data,
    script_labels,
)
from courseware.roofline.selection import selection_from_query
from courseware.roofline.selectors import measured_devices


@login_required
@require_GET
def roofline(request: HttpRequest) -> HttpResponse:
    """The interactive roofline. Everything is computed here once for the page without script;
    the script redraws from the embedded data, without asking the server again."""
    measured = measured_devices()
    devices = [*DATASHEET_DEVICES, *measured]
    selection = selection_from_query(request.GET, devices)
    context = {
        "datasheet_devices": DATASHEET_DEVICES,
        "measured": measured,
        "device_rows": device_rows(devices),
        "operations": operation_rows(),
        "selection": selection,
        "result": result_for(selection),
        # Form values stay in the plain notation the inputs and query strings use.
        "ai_value": f"{selection.ai:.6g}",
        "ai_log": f"{math.log10(selection.ai):.3f}",
        "ai_log_min": f"{math.log10(AI_MIN):g}",
        "ai_log_max": f"{math.log10(AI_MAX):g}",
        "ai_min": f"{AI_MIN:g}",
        "ai_max": f"{AI_MAX:g}",
        "data": script_data(devices, selection),
        "labels": script_labels(),
    }
    return render(request, "roofline/roofline.html", context)

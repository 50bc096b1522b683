// Tell the server the browser's time zone (an IANA name such as "Asia/Shanghai") in the `tz`
// cookie; courseware/accounts/timezone.py validates it and shows every date in that zone.
(function () {
  "use strict";
  var zone;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (e) {
    return; // an old browser: the server keeps its default zone
  }
  // IANA names use only these characters; written as they are, the server reads them as is.
  if (!zone || !/^[A-Za-z0-9_+\-\/]+$/.test(zone)) return;
  var current = document.cookie.match(/(?:^|;\s*)tz=([^;]*)/);
  if (current && current[1] === zone) return;
  document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax";
  // A first visit was drawn in the server's zone: draw it again in the student's, once the
  // cookie is stored (never in a loop), and never re-sending a form (only a GET page).
  var stored = document.cookie.indexOf("tz=" + zone) !== -1;
  document.addEventListener("DOMContentLoaded", function () {
    var body = document.body;
    if (stored && body.getAttribute("data-method") === "GET" && body.getAttribute("data-zone") !== zone) {
      window.location.reload();
    }
  });
})();

/* global document, window, navigator, setTimeout, HTMLElement */
// The dashboard's only script (CSP: script-src 'self'). Everything works without it; it adds
// copy buttons and refreshes a webhook page while a delivery's result is not yet known.
(function () {
  'use strict';
  document.addEventListener('click', function (event) {
    var target = event.target;
    if (!(target instanceof HTMLElement)) return;
    var button = target.closest('[data-copy]');
    if (!button) return;
    var source = document.getElementById(button.getAttribute('data-copy') || '');
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent || '').then(
      function () {
        var label = button.textContent;
        button.textContent = 'Copied';
        setTimeout(function () {
          button.textContent = label;
        }, 1500);
      },
      function () {
        /* The text stays selectable for a manual copy. */
      },
    );
  });
  var refresh = document.querySelector('[data-refresh]');
  if (refresh) {
    var seconds = Number(refresh.getAttribute('data-refresh')) || 3;
    setTimeout(function () {
      window.location.reload();
    }, seconds * 1000);
  }
})();

/* global document, window, fetch */
// Renders /openapi.json with Swagger UI (CSP: script-src 'self'; this file replaces the inline
// initialiser of Swagger UI's own index.html). The document names the default local address as
// its server; "Try it out" must call the server that served this page instead, which is also the
// only one the page's policy lets it reach (connect-src falls back to default-src 'self').
(function () {
  'use strict';
  window.addEventListener('DOMContentLoaded', function () {
    var target = document.getElementById('reference');
    if (!target) return;
    fetch('/openapi.json', { headers: { accept: 'application/json' } })
      .then(function (response) {
        if (!response.ok) throw new Error('GET /openapi.json answered ' + response.status);
        return response.json();
      })
      .then(function (spec) {
        spec.servers = [{ url: window.location.origin, description: 'This Tally server' }];
        target.replaceChildren();
        target.removeAttribute('aria-busy');
        window.SwaggerUIBundle({
          spec: spec,
          domNode: target,
          deepLinking: true,
          // The validator badge would ask another host to validate the document.
          validatorUrl: null,
          displayOperationId: true,
          defaultModelsExpandDepth: 0,
          tryItOutEnabled: false,
        });
      })
      .catch(function (error) {
        target.removeAttribute('aria-busy');
        target.textContent = 'The API description could not be loaded: ' + error.message;
      });
  });
})();

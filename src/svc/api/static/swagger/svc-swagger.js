// Starts Swagger UI over the document this server renders; loaded as a file so that the page's
// Content-Security-Policy needs no inline script.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: true,
    validatorUrl: null,
  });
});

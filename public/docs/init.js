// The document is public at /openapi.json; "Authorize" takes an API key for "Try it out".
window.ui = SwaggerUIBundle({
  url: '../openapi.json',
  dom_id: '#docs',
  deepLinking: true,
  persistAuthorization: false,
  // No badge from validator.swagger.io: the page talks to this service only.
  validatorUrl: null,
});

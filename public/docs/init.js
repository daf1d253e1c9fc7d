// The document is public at /openapi.json; "Authorize" takes an API key for "Try it out".
window.ui = SwaggerUIBundle({
  url: '../openapi.json',
  dom_id: '#docs',
  deepLinking: true,
  persistAuthorization: false,
});

/** Version of the service's interface description (OpenAPI document, MCP server info). */
export const API_VERSION = "1.0.0";

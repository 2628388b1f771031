/** The web_bot_auth room's face: what other rooms and the routes may use. */

export { botCaller, ownAuthorities, WebBotAuth } from "./verifier.ts";

import { type AdminCommand, AdminUsageError } from "./command.ts";

const need = (values: Record<string, unknown>, name: string): string => {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new AdminUsageError(`--${name} is required`);
  return v;
};

/** Storefront admin commands: sellers and signing-key rotation. Merged into `adminCommands`. */
export const storefrontAdminCommands: Record<string, AdminCommand> = {
  "seller create": {
    usage: "seller create --id <slug> --tenant <tn_...> --name <name> --host <host[:port]> [--host ...]",
    options: {
      id: { type: "string" },
      tenant: { type: "string" },
      name: { type: "string" },
      host: { type: "string", multiple: true },
    },
    async run(deps, v) {
      const tenantId = need(v, "tenant");
      if (!(await deps.repos.tenants.get(tenantId))) throw new AdminUsageError(`tenant not found: ${tenantId}`);
      const hosts = (Array.isArray(v.host) ? v.host : []).map(String);
      if (hosts.length === 0) throw new AdminUsageError("--host is required (repeat it for more hosts)");
      try {
        return await deps.storefront.sellers.create({
          sellerId: need(v, "id"),
          tenantId,
          name: need(v, "name"),
          hosts,
        });
      } catch (err) {
        throw new AdminUsageError((err as Error).message.split("\n")[0]!);
      }
    },
  },
  "seller list": {
    usage: "seller list",
    options: {},
    run: (deps) => deps.storefront.sellers.list(),
  },
  "storefront revoke-credential": {
    usage: "storefront revoke-credential --id <ag_...>",
    options: { id: { type: "string" } },
    async run(deps, v) {
      const id = need(v, "id");
      if (!(await deps.storefront.accounts.revokeCredential(id))) {
        throw new AdminUsageError(`credential not found: ${id}`);
      }
      const families = await deps.storefront.identity.revokeRefreshFamiliesOf(id);
      return {
        id,
        revoked: true,
        refreshFamiliesRevoked: families,
        note:
          "Its assertions and refresh tokens stop now; access tokens already issued expire within ACCESS_TOKEN_TTL_S",
      };
    },
  },
  "storefront rotate-key": {
    usage: "storefront rotate-key",
    options: {},
    async run(deps) {
      const kid = await deps.storefront.keys.rotate();
      return {
        kid,
        note: "New tokens are signed with this key; the previous key keeps verifying until its tokens expire",
      };
    },
  },
};

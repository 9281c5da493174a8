/** The inventory API's answer (`GET /app/inventory/v1/accounts/`), as a test or a figures script sets it on the simulator. */

/** An inventory listing `names`, every one active, each with a token and uid of its own: the body, as JSON text. */
export function inventoryBody(names: readonly string[]): string {
  return JSON.stringify(
    names.map((name, i) => ({ status: 'active', utoken: `u${i}`, uid: `1-1-${i}`, name })),
  );
}

/** What fixtures started lazily ask to have stopped when the run ends (the root after-hook runs them). */
const stops: (() => Promise<void>)[] = [];

export function atRunEnd(stop: () => Promise<void>): void {
  stops.push(stop);
}

export async function runEndStops(): Promise<void> {
  for (const stop of stops.splice(0).reverse()) await stop();
}

// A small JSON Schema check for the approval editor: the subset robobrain's
// skill schemas use (type, required, properties, additionalProperties, enum,
// minLength, maxLength, minimum, maximum, items, minItems). The server checks
// again; this only saves a round trip.

type Schema = Record<string, unknown>;

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function typeMatches(want: unknown, got: string): boolean {
  const wants = Array.isArray(want) ? want : [want];
  return wants.some((w) => w === got || (w === "number" && got === "integer"));
}

/** Problems with `value` under `schema`, each with its JSON pointer. */
export function validate(schema: unknown, value: unknown, path = ""): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const s = schema as Schema;
  const at = path || "/";
  const got = typeOf(value);
  if (s.type !== undefined && !typeMatches(s.type, got)) return [`${at}: expected ${JSON.stringify(s.type)}, found ${got}`];
  const errors: string[] = [];
  if (Array.isArray(s.enum) && !s.enum.some((x) => JSON.stringify(x) === JSON.stringify(value))) errors.push(`${at}: expected one of ${JSON.stringify(s.enum)}`);
  if (typeof value === "string") {
    if (typeof s.minLength === "number" && [...value].length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (typeof s.maxLength === "number" && [...value].length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
  }
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) errors.push(`${at}: below ${s.minimum}`);
    if (typeof s.maximum === "number" && value > s.maximum) errors.push(`${at}: above ${s.maximum}`);
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === "number" && value.length < s.minItems) errors.push(`${at}: fewer than ${s.minItems} items`);
    value.forEach((item, i) => errors.push(...validate(s.items, item, `${path}/${i}`)));
  }
  if (got === "object") {
    const obj = value as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, unknown>;
    for (const key of (s.required as string[] | undefined) ?? []) {
      if (!(key in obj)) errors.push(`${at}: missing required "${key}"`);
    }
    for (const [key, v] of Object.entries(obj)) {
      if (key in props) errors.push(...validate(props[key], v, `${path}/${key}`));
      else if (s.additionalProperties === false) errors.push(`${path}/${key}: not allowed`);
    }
  }
  return errors;
}

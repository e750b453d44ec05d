// How an approval is given on the page (and in the desktop app, which shows
// the same page): only by a deliberate act that cannot be part of typing.
// - The dialog opens only when the operator clicks *review*; a new approval
//   never opens it and never takes focus from the chat.
// - Its answer buttons are `type="button"` outside any form (Enter in a text
//   field never presses them), stay disabled for GUARD_MS after the dialog
//   opens, and take only a pointer click: Enter or Space on a focused button
//   is refused with a hint.
// - In the chat, `/approve ID`, `/reject ID [REASON]` and `/edit ID JSON`
//   typed in full are the keyboard's way; any other text is said.

/** Wall ms after the dialog opens during which its answers are refused. */
export const GUARD_MS = 1000;

/** The reason a reject without one sends (the console's too). */
export const DEFAULT_REJECT_REASON = "rejected by the operator";

/** What a line typed in the chat asks for. */
export type ChatLine =
  | { kind: "say"; text: string }
  | { kind: "json"; text: string }
  | { kind: "answer"; approvalId: string; command: Record<string, unknown> }
  | { kind: "error"; message: string }
  | { kind: "nothing" };

/** Reads a chat line: an utterance, a command as JSON, or an answer typed in full. */
export function parseChat(line: string): ChatLine {
  const text = line.trim();
  if (!text) return { kind: "nothing" };
  if (text.startsWith("{")) return { kind: "json", text };
  const m = /^\/(approve|reject|edit)(?:\s+(\S+))?(?:\s+([\s\S]*))?$/i.exec(text);
  if (!m) return { kind: "say", text };
  const verb = m[1].toLowerCase();
  const id = m[2];
  const rest = (m[3] ?? "").trim();
  if (!id) return { kind: "error", message: `usage: /${verb} ID${verb === "approve" ? "" : verb === "reject" ? " [REASON]" : " JSON"}` };
  switch (verb) {
    case "approve":
      if (rest) return { kind: "error", message: "usage: /approve ID" };
      return { kind: "answer", approvalId: id, command: { cmd: "approve", approval_id: id } };
    case "reject":
      return { kind: "answer", approvalId: id, command: { cmd: "reject", approval_id: id, reason: rest || DEFAULT_REJECT_REASON } };
    default: {
      if (!rest) return { kind: "error", message: "usage: /edit ID JSON (or click review to edit on the card)" };
      try {
        return { kind: "answer", approvalId: id, command: { cmd: "edit", approval_id: id, args: JSON.parse(rest) } };
      } catch (e) {
        return { kind: "error", message: `/edit: the arguments are not valid JSON: ${(e as Error).message}` };
      }
    }
  }
}

/** Why a click on an answer button is not taken, if it is not. */
export function refusal(click: { isTrusted: boolean; detail: number }, openedAt: number, now: number): string | undefined {
  if (now - openedAt < GUARD_MS) return "the card just opened: read it, then click (answers wait a second)";
  // A click from the keyboard (Enter or Space on a focused button) has detail 0.
  if (!click.isTrusted || click.detail === 0) return "answer with a click, or type /approve ID, /reject ID or /edit ID JSON in the chat";
  return undefined;
}

/**
 * A task's status message as the gateway keeps and shows it: one line of visible text, cut to
 * tasks.statusMessageMaxLength, with the handle where the backend named its own id. Every
 * writer of a record (creation, a poll, a notification) passes the backend's text through
 * here, so every answer built from the record (tasks/list, early polls, relayed objects) shows
 * the same safe text.
 */
import { hideBackendIdInText, type TaskIds } from './backend-ids.js';

// What is not visible text, or can hide or reorder the text a person or a model is shown:
// controls (Cc); format characters (Cf: bidirectional controls, zero-width characters, the
// soft hyphen, U+061C, U+180E, U+FFF9-FFFB, and the tag block U+E0000-E007F, invisible text
// that models read, the "ASCII smuggling" trick); default-ignorable code points (variation
// selectors, U+034F, the Hangul fillers); private-use (Co) and unassigned (Cn, as of the
// Unicode version of the running Node) code points; and lone surrogates (Cs: with the u flag
// only unpaired halves match; no UTF-8 writer can encode them). Unicode properties rather than
// a list of ranges, so that a class is covered whole. The cost: joiners and variation
// selectors inside emoji sequences go too (a family emoji shows as its members).
const UNSAFE_CHARACTERS = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
// Line breaks and tabs become spaces: a status message is one line.
const LINE_BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;

/** The status message a task record keeps (undefined: the backend said none). */
export function recordedStatusMessage(message: string | undefined, maxLength: number, ids: TaskIds): string | undefined {
  return message === undefined ? undefined : sanitizeStatusMessage(message, maxLength, ids);
}

/** `ids`: the task's, when the text may name the backend id (stripped first, so no invisible character can split it). */
export function sanitizeStatusMessage(message: string, maxLength: number, ids?: TaskIds): string {
  const stripped = message.replace(LINE_BREAKS, ' ').replace(UNSAFE_CHARACTERS, '');
  const cleaned = ids ? hideBackendIdInText(stripped, ids) : stripped;
  // Cut on code points so a surrogate pair is never split.
  const points = Array.from(cleaned);
  return points.length > maxLength ? points.slice(0, maxLength).join('') : cleaned;
}

// Compact JSON of a tool's result, written only up to a size limit: JSON.stringify would build the whole text of
// an enormous object before anything could cut it. The same text as JSON.stringify while it fits, except that
// it never throws: a BigInt is written as its digits, a repeated reference to an enclosing object as "[Circular]".

export interface BoundedJson {
  text: string;
  /** False when the value's JSON is longer than maxChars: text is its first maxChars characters. */
  complete: boolean;
}

class Full extends Error {}

export function boundedJson(value: unknown, maxChars: number): BoundedJson {
  const parts: string[] = [];
  let length = 0;
  const emit = (text: string) => {
    // A long string is cut before it is quoted, so it is never copied whole either.
    const piece = text.length > maxChars - length + 1 ? text.slice(0, maxChars - length + 1) : text;
    parts.push(piece);
    length += piece.length;
    if (length > maxChars) throw new Full();
  };
  const enclosing = new Set<object>();

  /** Writes `item` and returns true, or returns false for what JSON leaves out (undefined, functions, symbols). */
  const write = (item: unknown, key: string): boolean => {
    let current = item;
    if (
      typeof current === 'object' &&
      current !== null &&
      typeof (current as { toJSON?: unknown }).toJSON === 'function'
    ) {
      current = (current as { toJSON: (key: string) => unknown }).toJSON(key);
    }
    if (current === null) return (emit('null'), true);
    switch (typeof current) {
      case 'string':
        emit(JSON.stringify(current.length > maxChars ? current.slice(0, maxChars) : current));
        return true;
      case 'number':
        emit(Number.isFinite(current) ? String(current) : 'null');
        return true;
      case 'boolean':
        emit(String(current));
        return true;
      case 'bigint':
        emit(current.toString());
        return true;
      case 'object':
        break;
      default:
        return false;
    }
    if (enclosing.has(current)) return (emit('"[Circular]"'), true);
    enclosing.add(current);
    if (Array.isArray(current)) {
      emit('[');
      current.forEach((element: unknown, index) => {
        if (index > 0) emit(',');
        if (!write(element, String(index))) emit('null');
      });
      emit(']');
    } else {
      emit('{');
      let first = true;
      for (const [name, field] of Object.entries(current)) {
        const mark = parts.length;
        const before = length;
        emit(`${first ? '' : ','}${JSON.stringify(name)}:`);
        if (write(field, name)) first = false;
        else {
          parts.length = mark;
          length = before;
        }
      }
      emit('}');
    }
    enclosing.delete(current);
    return true;
  };

  try {
    if (!write(value, '')) return { text: 'null', complete: true };
    return { text: parts.join(''), complete: true };
  } catch (error) {
    if (!(error instanceof Full)) throw error;
    return { text: parts.join('').slice(0, maxChars), complete: false };
  }
}

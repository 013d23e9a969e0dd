// What the page says when the hub refuses the key a person entered. The
// hub's own sentence is written for someone signing with curl (an HMAC
// recipe); a person at the page needs to know which file's contents to
// paste, or whom to ask. Pure: no DOM, so node can test it.

/** The status sentence for a refused key: what happened, and what the person does next. */
export function keyRefusalText(agent, code, sentence) {
  if (code === 'bad_signature') {
    return `The hub does not take this key for ${agent}: it is not the one in the hub's keys/${agent}.key. ` +
      `Paste that file's whole contents into the key box and follow live again. `;
  }
  if (code === 'unknown_agent') {
    return `The hub holds no key for ${agent}. Check the name; if it is right, ask the hub's operator to run ` +
      `"p-e-relay keys add ${agent}" and give you the file it makes, keys/${agent}.key, to paste here. `;
  }
  return `The hub refused the key for ${agent}: ${sentence} `;
}

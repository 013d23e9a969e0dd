// The agent name and key a person enters to follow the signed stream. The key
// never leaves this tab: it is held in memory (or, if the person ticks "keep
// in this tab", in sessionStorage, which the browser drops when the tab
// closes) and is only ever used to sign, in live.js.

import { byId } from './dom.js';

const STORAGE_KEY = 'p-e-relay.credential';
const AGENT_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Wires the key form. onConnect(agent, key) when a credential is entered,
 * onForget() when the person drops it, onInvalid(sentence) for bad input.
 */
export function wireKeyForm({ onConnect, onForget, onInvalid }) {
  byId('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const agent = byId('agent').value.trim();
    // Trimmed, as the hub trims keys/<agent>.key.
    const key = byId('key').value.trim();
    if (!AGENT_SHAPE.test(agent) || !key) return onInvalid('Enter an agent name (letters, digits, . _ -) and its key.');
    byId('key').value = '';
    if (byId('remember').checked) sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ agent, key }));
    else sessionStorage.removeItem(STORAGE_KEY);
    showSignedIn(agent);
    onConnect(agent, key);
  });
  byId('forget').addEventListener('click', () => {
    forgetCredential();
    onForget();
  });
}

/** The credential kept in this tab, if the person asked for that. */
export function savedCredential() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
    if (saved && AGENT_SHAPE.test(saved.agent) && typeof saved.key === 'string') {
      byId('agent').value = saved.agent;
      byId('remember').checked = true;
      showSignedIn(saved.agent);
      return saved;
    }
  } catch {
    // nothing usable saved
  }
  return null;
}

/** Drops the kept credential and asks for one again (forgotten, or refused by the hub). */
export function forgetCredential() {
  sessionStorage.removeItem(STORAGE_KEY);
  byId('key-form').classList.remove('connected');
}

function showSignedIn(agent) {
  byId('key-form').classList.add('connected');
  byId('signed-as').textContent = agent;
}

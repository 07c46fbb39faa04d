"""What an editor shows about a rules document, decided here and pure.

The editor endpoint (`mecha-sidecar lsp`) publishes diagnostics, hovers, code
lenses and code actions on the store's rules files. Every one of those is a
decision about the domain — is this rule over the cap, does it restate the
person's own rule, what did the ledger pin on it, which fix does a finding
call for, is a proposal waiting — so the decisions live here, and the server
only converts positions and wraps results in LSP types. Nothing here imports
pygls or lsprotocol.

One module per feature, over one parsed document:

- `results`: the codes and severities, `Act`, the result shapes;
- `document`: the text — lines, edits applied, where each table sits and
  what it decodes to (the scanner);
- `store_view`: which files are rules documents, the sibling file, the
  store's pending proposals and tallies;
- `diagnostics`: `check_document`, every finding;
- `edits`: the disable/enable and remove-rule edits, checked;
- `actions`: the code actions each finding and rule brings;
- `hover`, `lenses`;
- `review`: what an editor says of a proposal (its summary, the lines after
  an accept, a rejection or a proposed retirement).

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""

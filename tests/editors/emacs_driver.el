;;; emacs_driver.el --- drive an Emacs LSP client against mecha-sidecar lsp -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs.py as
;;   emacs --batch -l emacs_driver.el
;; with MECHA_EMACS_TEST naming a JSON file of parameters, `client' among
;; them: "eglot" or "lsp-mode".  Debian's package of that client,
;; configured as its manual says, opens the learned rules file, waits for
;; the server's diagnostics, picks "Show diff of proposal ..." and then
;; "Accept proposal ..." from the file's code actions as a person picks
;; them from the menu, and writes what it saw as JSON: every notification
;; and request the server sent as the client received them, and every
;; warning Emacs displayed.  The Python side judges it, and the store.

(require 'cl-lib)
(require 'json)

(defvar mecha-params
  (let ((json-object-type 'alist) (json-array-type 'list) (json-key-type 'symbol))
    (json-read-file (getenv "MECHA_EMACS_TEST"))))

(defun mecha-param (key) (alist-get key mecha-params))

(defvar mecha-eglot (equal (mecha-param 'client) "eglot"))
(require (if mecha-eglot 'eglot 'lsp-mode))

(defvar mecha-out (list (cons 'errors nil)))
(defvar mecha-notifications nil "Every notification the server sent, newest first.")
(defvar mecha-requests nil "Every request the server sent, newest first.")
(defvar mecha-warnings nil "Every warning Emacs displayed, newest first.")
(defvar mecha-deadline (+ (float-time) (/ (mecha-param 'budget_ms) 1000.0)))

(defun mecha-record (key value)
  (setf (alist-get key mecha-out) value))

(defun mecha-finish (code)
  (mecha-record 'notifications (reverse mecha-notifications))
  (mecha-record 'requests (reverse mecha-requests))
  (mecha-record 'warnings (reverse mecha-warnings))
  ;; The server's stderr, which eglot keeps in a buffer of its own.
  (mecha-record 'server_stderr
                (mapconcat (lambda (b) (with-current-buffer b (buffer-string)))
                           (cl-remove-if-not (lambda (b) (string-match-p "stderr" (buffer-name b))) (buffer-list))
                           "\n"))
  (with-temp-file (mecha-param 'results)
    (insert (json-encode mecha-out)))
  (kill-emacs code))

(define-error 'mecha-failed "mecha test step failed")

(defun mecha-fail (fmt &rest args)
  (push (apply #'format fmt args) (alist-get 'errors mecha-out))
  (signal 'mecha-failed nil))

(defun mecha-wait (what predicate)
  "Serve the server's messages until PREDICATE is non-nil; fail after the budget."
  (let ((limit (min (+ (float-time) (/ (mecha-param 'step_ms) 1000.0)) mecha-deadline))
        value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) limit))
      (accept-process-output nil 0.05))
    (cond (value)
          ;; `lenient': note it and go on, to see all a client shows an older server.
          ((mecha-param 'lenient) (push (format "timed out waiting for %s" what) (alist-get 'errors mecha-out)) nil)
          (t (mecha-fail "timed out waiting for %s" what)))))

;; What the server sends, as the client receives it.
(if mecha-eglot
    (progn
      (advice-add 'eglot-handle-notification :before
                  (lambda (_server method &rest params)
                    (push (vector (format "%s" method) params) mecha-notifications)))
      (advice-add 'eglot-handle-request :before
                  (lambda (_server method &rest params)
                    (push (vector (format "%s" method) params) mecha-requests))))
  (advice-add 'lsp--on-notification :before
              (lambda (_workspace message)
                (push (vector (lsp-get message :method) (lsp-get message :params)) mecha-notifications)))
  (advice-add 'lsp--on-request :before
              (lambda (_workspace message)
                (push (vector (lsp-get message :method) (lsp-get message :params)) mecha-requests))))
(advice-add 'display-warning :before
            (lambda (_type message &optional level &rest _)
              ;; flymake logs its own progress as :debug warnings: not a person's concern.
              (when (memq (or level :warning) '(:warning :error :emergency))
                (push (format "%s" message) mecha-warnings))))

(defun mecha-get (object key)
  "KEY of a JSON object as the client parsed it: a plist (eglot) or a hash table (lsp-mode)."
  (if (hash-table-p object) (gethash (substring (symbol-name key) 1) object) (plist-get object key)))

(defun mecha-sent (method)
  "The params of every METHOD notification so far, oldest first."
  (cl-loop for seen in (reverse mecha-notifications)
           when (equal (aref seen 0) method) collect (aref seen 1)))

(defun mecha-shown-message-since (count)
  "Whether the server sent `window/showMessage' after the first COUNT notifications."
  (cl-loop for seen in (butlast mecha-notifications count)
           thereis (equal (aref seen 0) "window/showMessage")))

(defun mecha-diagnostics ()
  "The client's diagnostics in this buffer as [LINE TEXT], LINE 1-based."
  (if mecha-eglot
      (mapcar (lambda (d)
                (vector (line-number-at-pos (flymake-diagnostic-beg d)) (flymake-diagnostic-text d)))
              (flymake-diagnostics))
    (mapcar (lambda (d)
              (vector (1+ (lsp:position-line (lsp:range-start (lsp:diagnostic-range d))))
                      (format "[%s] %s" (lsp:diagnostic-code? d) (lsp:diagnostic-message d))))
            (gethash (lsp--fix-path-casing buffer-file-name) (lsp-diagnostics t)))))

(defun mecha-run-action (prefix)
  "Run the code action on the first line whose title starts with PREFIX,
picked as a person picks it from the client's menu; return the titles offered."
  (goto-char (point-min))
  (let* ((offered nil)
         (last-nonmenu-event ?\r)       ; a key, not a mouse click: eglot's menu is `completing-read'
         (chooser (lambda (_prompt items &rest _)
                    (setq offered (mapcar (lambda (item) (if (consp item) (car item) item)) items))
                    (or (cl-find-if (lambda (title) (string-prefix-p prefix title)) offered)
                        (mecha-fail "no code action starting %S among %S" prefix offered)))))
    (cl-letf (((symbol-function 'completing-read) chooser))
      (if mecha-eglot
          (eglot-code-actions (point-min) (line-end-position) nil t)
        (call-interactively #'lsp-execute-code-action)))
    offered))

(defun mecha-start ()
  "Configure the client as its manual says and start it in this buffer."
  (if mecha-eglot
      (progn
        (setq eglot-server-programs
              `((conf-toml-mode . (,@(mecha-param 'cmd)
                                    :initializationOptions (:learningDir ,(mecha-param 'learning_dir))))))
        (setq eglot-sync-connect t)
        (call-interactively #'eglot)
        (mecha-wait "eglot to manage the buffer" (lambda () (bound-and-true-p eglot--managed-mode))))
    (setq lsp-auto-guess-root t            ; no prompt for the project root
          lsp-restart 'ignore               ; no prompt when the server exits at the end
          lsp-enable-file-watchers nil
          lsp-session-file (expand-file-name "lsp-session" (mecha-param 'home)))
    (add-to-list 'lsp-language-id-configuration '(conf-toml-mode . "toml"))
    (let ((cmd (mecha-param 'cmd)) (dir (mecha-param 'learning_dir)))
      (lsp-register-client
       (make-lsp-client
        :new-connection (lsp-stdio-connection (lambda () cmd))
        :major-modes '(conf-toml-mode)
        :server-id 'mecha
        :add-on? t
        :initialization-options (lambda () (list :learningDir dir)))))
    (lsp)
    (mecha-wait "lsp-mode to initialize the server"
                (lambda () (cl-some (lambda (w) (eq (lsp--workspace-status w) 'initialized)) (lsp-workspaces))))))

(defun mecha-stop ()
  (if mecha-eglot
      (eglot-shutdown (eglot-current-server))
    (mapc #'lsp-workspace-shutdown (lsp-workspaces))))

(defun mecha-main ()
  (find-file (mecha-param 'learned))
  (mecha-record 'major_mode (format "%s" major-mode))
  (mecha-start)

  ;; Diagnostics: published by the server, shown by flymake.
  (mecha-wait "diagnostics from the server" (lambda () (mecha-sent "textDocument/publishDiagnostics")))
  (mecha-wait "the client to show them"
              (lambda ()
                (when mecha-eglot (flymake-start))
                (accept-process-output nil 0.05)
                (mecha-diagnostics)))
  (mecha-record 'diagnostics (mecha-diagnostics))

  ;; Show diff.
  (let ((before (length mecha-notifications)) (requests (length mecha-requests)))
    (mecha-record 'actions (mecha-run-action "Show diff of proposal"))
    (mecha-wait "the diff shown after Show diff"
                (lambda () (or (> (length mecha-requests) requests) (mecha-shown-message-since before))))
    (accept-process-output nil 0.3)
    (mecha-record 'after_diff (butlast mecha-notifications before))
    (mecha-record 'diff_requests (butlast mecha-requests requests)))

  ;; Accept.
  (let ((before (length mecha-notifications)))
    (mecha-run-action "Accept proposal")
    (mecha-wait "a message after Accept"
                (lambda () (mecha-shown-message-since before)))
    (mecha-wait "diagnostics without the pending proposal"
                (lambda ()
                  (let ((last (car (last (mecha-sent "textDocument/publishDiagnostics")))))
                    (not (cl-find "pending-proposal" (mecha-get last :diagnostics)
                                  :key (lambda (d) (mecha-get d :code)) :test #'equal)))))
    (accept-process-output nil 0.5)
    (mecha-record 'after_accept (butlast mecha-notifications before)))

  (mecha-record 'messages (with-current-buffer "*Messages*" (buffer-string)))
  (mecha-stop))

(condition-case err
    (progn (mecha-main) (mecha-finish 0))
  (mecha-failed (mecha-finish 1))
  (error (push (format "%S" err) (alist-get 'errors mecha-out)) (mecha-finish 2)))

//! Client-side checks for the setup and sign-in forms, mirroring the server's rules so most
//! mistakes are caught before a round trip.

export const USERNAME_MAX_CHARS = 64;
export const PASSWORD_MIN_CHARS = 8;
export const PASSWORD_MAX_CHARS = 1024;

/** One message per invalid field; an empty object means the form is valid. */
export type FieldErrors<K extends string> = Partial<Record<K, string>>;

export interface SetupValues {
  username: string;
  password: string;
  confirm: string;
}

export interface LoginValues {
  username: string;
  password: string;
}

// Counts code points, as the server does, so an emoji counts once.
const charCount = (text: string) => [...text].length;

export function validateUsername(raw: string): string | undefined {
  const username = raw.trim();
  if (username === "") return "Enter a username.";
  if (charCount(username) > USERNAME_MAX_CHARS) return `Use ${USERNAME_MAX_CHARS} characters or fewer.`;
  if (/\p{Cc}/u.test(username)) return "Usernames can't contain control characters.";
  return undefined;
}

export function validateNewPassword(password: string): string | undefined {
  const length = charCount(password);
  if (length === 0) return "Choose a password.";
  if (length < PASSWORD_MIN_CHARS) return `Use at least ${PASSWORD_MIN_CHARS} characters.`;
  if (length > PASSWORD_MAX_CHARS) return `Use ${PASSWORD_MAX_CHARS} characters or fewer.`;
  return undefined;
}

export function validateSetup(values: SetupValues): FieldErrors<keyof SetupValues> {
  const errors: FieldErrors<keyof SetupValues> = {};
  const username = validateUsername(values.username);
  if (username) errors.username = username;
  const password = validateNewPassword(values.password);
  if (password) errors.password = password;
  if (values.confirm === "") errors.confirm = "Enter the password again.";
  else if (values.confirm !== values.password) errors.confirm = "Passwords don't match.";
  return errors;
}

export function validateLogin(values: LoginValues): FieldErrors<keyof LoginValues> {
  const errors: FieldErrors<keyof LoginValues> = {};
  if (values.username.trim() === "") errors.username = "Enter your username.";
  if (values.password === "") errors.password = "Enter your password.";
  return errors;
}

/** The first field with an error, in form order, for moving focus there. */
export function firstInvalid<K extends string>(order: readonly K[], errors: FieldErrors<K>): K | undefined {
  return order.find((field) => errors[field] !== undefined);
}

// esbuild loads .css as text (`--loader:.css=text` in the build:viewer script)
declare module '*.css' {
  const text: string;
  export default text;
}

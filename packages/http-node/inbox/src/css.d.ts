/** Stylesheets imported for the bundler (esbuild emits them beside the script). */
declare module "*.css"

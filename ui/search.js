// The dashboard's tool search box and listing summary (moved here from app.js).
export {};
